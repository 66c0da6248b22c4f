package desired

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func TestPVC(t *testing.T) {
	t.Parallel()
	clusterRef := []metav1.OwnerReference{{
		APIVersion:         "etcd-operator.cozystack.io/v1alpha2",
		Kind:               "EtcdCluster",
		Name:               "main",
		UID:                "cluster-uid-1",
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}}
	base := func() *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: metav1.ObjectMeta{
				Name:      "data-main-x7k2p",
				Namespace: "prod",
				Labels: map[string]string{
					"app.kubernetes.io/name":             "etcd",
					"app.kubernetes.io/instance":         "main",
					"app.kubernetes.io/managed-by":       "etcd-operator",
					"app.kubernetes.io/component":        "main-x7k2p",
					"etcd-operator.cozystack.io/cluster": "main",
				},
				Annotations:     map[string]string{"etcd-operator.cozystack.io/member-uid": "member-uid-1"},
				OwnerReferences: clusterRef,
			},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: resource.MustParse("1Gi"),
				}},
				VolumeMode: ptr.To(corev1.PersistentVolumeFilesystem),
			},
		}
	}
	tests := []struct {
		name       string
		member     func(*etcdv1alpha2.EtcdMember)
		cluster    func(*etcdv1alpha2.EtcdCluster)
		nilCluster bool
		want       func() *corev1.PersistentVolumeClaim
	}{
		{"reclaimPolicy Delete: owned by the cluster", nil, nil, false, base},
		{"reclaimPolicy unset behaves like the default, Delete", nil,
			func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Storage.ReclaimPolicy = "" }, false, base},
		{"reclaimPolicy Retain: no owner", nil,
			func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Storage.ReclaimPolicy = etcdv1alpha2.ReclaimPolicyRetain }, false,
			func() *corev1.PersistentVolumeClaim {
				p := base()
				p.OwnerReferences = nil
				return p
			}},
		{"no owner given", nil, nil, true, func() *corev1.PersistentVolumeClaim {
			p := base()
			p.OwnerReferences = nil
			return p
		}},
		{"size and storage class", func(m *etcdv1alpha2.EtcdMember) {
			setSize(&m.Spec.Storage, "20Gi")
			m.Spec.Storage.StorageClassName = ptr.To("fast")
		}, nil, false, func() *corev1.PersistentVolumeClaim {
			p := base()
			p.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("20Gi")
			p.Spec.StorageClassName = ptr.To("fast")
			return p
		}},
		{"empty storage class turns provisioning off", func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.Storage.StorageClassName = ptr.To("")
		}, nil, false, func() *corev1.PersistentVolumeClaim {
			p := base()
			p.Spec.StorageClassName = ptr.To("")
			return p
		}},
		{"additional metadata, operator keys win", func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{
				Labels:      map[string]string{"team": "db", etcdv1alpha2.LabelComponent: "x", etcdv1alpha2.LabelRole: "voter"},
				Annotations: map[string]string{"backup": "daily", etcdv1alpha2.AnnotationMemberUID: "forged"},
			}
		}, nil, false, func() *corev1.PersistentVolumeClaim {
			p := base()
			p.Labels["team"] = "db"
			p.Annotations["backup"] = "daily"
			return p
		}},
		{"memory members have no PVC", func(m *etcdv1alpha2.EtcdMember) {
			m.Spec.Storage = storageSpec("1Gi", etcdv1alpha2.StorageMediumMemory)
		}, nil, false, func() *corev1.PersistentVolumeClaim { return nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var m *etcdv1alpha2.EtcdMember
			if tc.member != nil {
				m = newMember(tc.member)
			} else {
				m = newMember()
			}
			var c *etcdv1alpha2.EtcdCluster
			if !tc.nilCluster {
				if tc.cluster != nil {
					c = newCluster(tc.cluster)
				} else {
					c = newCluster()
				}
			}
			if diff := cmp.Diff(tc.want(), PVC(m, c)); diff != "" {
				t.Errorf("PVC mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPVCOwnerReferences: a policy change reaches an existing PVC both ways, other owners are
// kept, and an unchanged PVC gets its own slice back (no write).
func TestPVCOwnerReferences(t *testing.T) {
	t.Parallel()
	c := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "main", UID: "cluster-uid-1"}}
	own := clusterOwnerRef(c)
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "keep", UID: "other"}
	retain := c.DeepCopy()
	retain.Spec.Storage.ReclaimPolicy = etcdv1alpha2.ReclaimPolicyRetain
	stale := own
	stale.Name = "renamed" // the same owner under an outdated reference
	for name, tc := range map[string]struct {
		current []metav1.OwnerReference
		owner   *etcdv1alpha2.EtcdCluster
		want    []metav1.OwnerReference
	}{
		"Delete adds the cluster":         {nil, c, []metav1.OwnerReference{own}},
		"Delete keeps other owners":       {[]metav1.OwnerReference{other}, c, []metav1.OwnerReference{other, own}},
		"Delete rewrites a stale ref":     {[]metav1.OwnerReference{stale}, c, []metav1.OwnerReference{own}},
		"Retain removes the cluster":      {[]metav1.OwnerReference{own}, retain, nil},
		"Retain keeps other owners":       {[]metav1.OwnerReference{own, other}, retain, []metav1.OwnerReference{other}},
		"Retain on an unowned PVC":        {nil, retain, nil},
		"Delete on a PVC owned already":   {[]metav1.OwnerReference{own}, c, []metav1.OwnerReference{own}},
		"Delete after another owner, too": {[]metav1.OwnerReference{other, own}, c, []metav1.OwnerReference{other, own}},
	} {
		if diff := cmp.Diff(tc.want, PVCOwnerReferences(tc.current, tc.owner)); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", name, diff)
		}
	}
	current := []metav1.OwnerReference{other, own}
	if got := PVCOwnerReferences(current, c); &got[0] != &current[0] {
		t.Errorf("an unchanged list was copied: callers would write for nothing")
	}
}
