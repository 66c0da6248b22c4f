package translate

import (
	"fmt"
	"path"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

// minStorage is the smallest spec.storage.size the API accepts (docs/api.md).
var minStorage = resource.MustParse("256Mi")

// translateStorage maps the claim template and the live PVCs onto spec.storage. The size is
// the largest live request (a volume may have been expanded past the template), the class the
// live one (the default class may have been filled in, and it can never change later).
func (t *translator) translateStorage() {
	c := t.in.Cluster
	if c.Spec.Storage.EmptyDir != nil || (t.in.StatefulSet != nil && len(t.in.StatefulSet.Spec.VolumeClaimTemplates) == 0) {
		t.emptyDir = true
		t.refuse(RefusalEmptyDirStorage, "spec.storage.emptyDir",
			"the legacy members keep their data on emptyDir volumes; this operator has no in-place equivalent (its Memory medium is tmpfs, and a Pod restart loses it)",
			"move the data with a snapshot: back it up and restore it into a new cluster with PVC storage")
		return
	}
	t.checkClaimTemplate()
	vct := c.Spec.Storage.VolumeClaimTemplate.Spec
	size := legacy.DefaultStorageSize.DeepCopy()
	if q, ok := vct.Resources.Requests[corev1.ResourceStorage]; ok && !q.IsZero() {
		size = q.DeepCopy()
	}
	for _, p := range t.in.PVCs {
		if q, ok := p.Spec.Resources.Requests[corev1.ResourceStorage]; ok && q.Cmp(size) > 0 {
			size = q.DeepCopy()
		}
	}
	if size.Cmp(minStorage) < 0 {
		t.refuse(RefusalStorageTooSmall, "spec.storage.volumeClaimTemplate.spec.resources.requests.storage",
			fmt.Sprintf("the volumes are %s; this operator needs at least 256Mi (etcd preallocates two 64 MB WAL segments)", size.String()),
			"expand the PVCs to 256Mi or more (their StorageClass must allow expansion), then re-run")
	}
	t.size = size
	t.spec.Storage = etcdv1alpha2.StorageSpec{Size: ptr.To(size.DeepCopy()), StorageClassName: t.storageClass(vct.StorageClassName), ReclaimPolicy: t.reclaimPolicy()}
	if modes := vct.AccessModes; len(modes) > 0 && (len(modes) != 1 || modes[0] != corev1.ReadWriteOnce) {
		t.warn(WarnAccessModes, "spec.storage.volumeClaimTemplate.spec.accessModes",
			fmt.Sprintf("the claim template asks for %v; existing PVCs keep their modes, members added later get ReadWriteOnce", modes), "")
	}
	if c.Spec.Bootstrap != nil && c.Spec.Bootstrap.Restore != nil {
		t.warn(WarnRestoreDropped, "spec.bootstrap.restore", "the legacy restore settings are dropped: the data is already there", "")
	}
}

// checkClaimTemplate refuses a renamed claim template: the PVCs would not be data-<pod>.
func (t *translator) checkClaimTemplate() {
	name := t.in.Cluster.Spec.Storage.VolumeClaimTemplate.Name
	if sts := t.in.StatefulSet; sts != nil && len(sts.Spec.VolumeClaimTemplates) > 0 {
		name = sts.Spec.VolumeClaimTemplates[0].Name
	}
	if name != "" && name != legacy.ClaimTemplateName {
		t.refuse(RefusalClaimTemplateName, "spec.storage.volumeClaimTemplate.metadata.name",
			fmt.Sprintf("the claim template is named %q, so the PVCs are %s-<pod>; adopted members find their data only on data-<pod>", name, name),
			"no in-place adoption is possible; back the cluster up and restore it into a new one")
	}
}

// storageClass is the class the live PVCs use, else the template's.
func (t *translator) storageClass(template *string) *string {
	var classes []string
	for _, p := range t.in.PVCs {
		if p.Spec.StorageClassName != nil && !contains(classes, *p.Spec.StorageClassName) {
			classes = append(classes, *p.Spec.StorageClassName)
		}
	}
	switch {
	case len(classes) == 0:
		return template
	case len(classes) > 1:
		t.warn(WarnStorageClassDiffers, "PersistentVolumeClaims",
			fmt.Sprintf("the PVCs use the StorageClasses %s; spec.storage.storageClassName is %s, which members added later get", strings.Join(classes, ", "), classes[0]), "")
	}
	return ptr.To(classes[0])
}

// reclaimPolicy keeps what the legacy layout did when the cluster was deleted: the
// StatefulSet's PVCs survived unless its retention policy deleted them.
func (t *translator) reclaimPolicy() etcdv1alpha2.ReclaimPolicy {
	if sts := t.in.StatefulSet; sts != nil && sts.Spec.PersistentVolumeClaimRetentionPolicy != nil &&
		sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
		return etcdv1alpha2.ReclaimPolicyDelete
	}
	return etcdv1alpha2.ReclaimPolicyRetain
}

// dataDirSubPath is the live --data-dir below the data volume's mount: the one directory an
// adopted member's data-dir-subpath annotation may name.
func (t *translator) dataDirSubPath() (string, bool) {
	dir := t.flags["data-dir"]
	mount := legacy.DataMountPath
	if sts := t.in.StatefulSet; sts != nil {
		if c := etcdContainer(sts.Spec.Template.Spec.Containers); c != nil {
			for _, m := range c.VolumeMounts {
				if m.Name == legacy.DataVolumeName {
					mount = m.MountPath
				}
			}
		}
	}
	rel, ok := strings.CutPrefix(path.Clean(dir), path.Clean(mount)+"/")
	if !ok || rel == "" || strings.Contains(rel, "/") || strings.HasPrefix(rel, ".") {
		return "", false
	}
	return rel, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
