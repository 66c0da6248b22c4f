package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const (
	// coreDNSUser is the user name in CoreDNS's client certificate.
	coreDNSUser = "etcd-operator-local:coredns"
	// StorageClassName is the cluster's default StorageClass, backed by local PVs.
	StorageClassName = "local"
	// ExpandableStorageClassName is a second class of local PVs that allows volume expansion,
	// expanded by the cluster's own external resizer (hack/localcluster/resizer).
	ExpandableStorageClassName = "local-expandable"
	// expandableProvisioner is the provisioner name of ExpandableStorageClassName. Nothing
	// provisions for it (its PVs are pre-created like the default class's); a name other than
	// kubernetes.io/no-provisioner keeps the in-tree plugins out of its expansion.
	expandableProvisioner = "etcd-operator.local/local-expandable"
)

// bootstrap creates the cluster objects the components and tests rely on: read access for
// CoreDNS, the default StorageClass and its local PersistentVolumes.
func (c *Cluster) bootstrap(ctx context.Context) error {
	cs, err := c.Client()
	if err != nil {
		return err
	}
	if err := createCoreDNSRBAC(ctx, cs); err != nil {
		return err
	}
	if err := createStorageClasses(ctx, cs); err != nil {
		return err
	}
	return c.ensureVolumes(ctx, cs)
}

// ignoreExists makes creates idempotent: up runs on clusters that already have the object.
func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func createCoreDNSRBAC(ctx context.Context, cs kubernetes.Interface) error {
	name := "etcd-operator-local:coredns"
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return fmt.Errorf("creating ClusterRole %s: %w", name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: coreDNSUser}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return fmt.Errorf("creating ClusterRoleBinding %s: %w", name, err)
	}
	return nil
}

func createStorageClasses(ctx context.Context, cs kubernetes.Interface) error {
	bindingMode := storagev1.VolumeBindingWaitForFirstConsumer
	reclaim := corev1.PersistentVolumeReclaimRetain
	classes := []*storagev1.StorageClass{{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		// Volumes are pre-created by up (see ensureVolumes); binding waits for the Pod so the
		// scheduler picks a PV on the node the Pod can run on.
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: &bindingMode,
		ReclaimPolicy:     &reclaim,
	}, {
		ObjectMeta:           metav1.ObjectMeta{Name: ExpandableStorageClassName},
		Provisioner:          expandableProvisioner,
		VolumeBindingMode:    &bindingMode,
		ReclaimPolicy:        &reclaim,
		AllowVolumeExpansion: ptr.To(true),
	}}
	for _, sc := range classes {
		if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); ignoreExists(err) != nil {
			return fmt.Errorf("creating StorageClass %s: %w", sc.Name, err)
		}
	}
	return nil
}
