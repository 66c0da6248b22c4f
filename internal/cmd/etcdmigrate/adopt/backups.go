package adopt

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/migrate/plan"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
)

// carryBackups is step 9: each EtcdBackup becomes an EtcdSnapshot of the same name (a new
// snapshot to the same place) and goes; each EtcdBackupSchedule becomes an EtcdSnapshotSchedule
// when that kind is served, else it stays and the summary says what to do.
func (a *Adopter) carryBackups(ctx context.Context, c *etcdv1alpha2.EtcdCluster, backups []legacy.EtcdBackup, schedules []legacy.EtcdBackupSchedule, served bool) error {
	for _, b := range backups {
		snap := &etcdv1alpha2.EtcdSnapshot{
			ObjectMeta: migratedMeta(b.ObjectMeta),
			Spec:       etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: b.Spec.ClusterRef, Destination: plan.SnapshotLocation(b.Spec.Destination)},
		}
		if err := a.replaceLegacy(ctx, snap, legacy.EtcdBackupGVK, b.Name); err != nil {
			return err
		}
	}
	if !served {
		for _, s := range schedules {
			a.logf("kept EtcdBackupSchedule %s/%s: EtcdSnapshotSchedule is not served; recreate it as one when it is", s.Namespace, s.Name)
		}
		return nil
	}
	for _, s := range schedules {
		sched := &etcdv1alpha2.EtcdSnapshotSchedule{
			ObjectMeta: migratedMeta(s.ObjectMeta),
			Spec: etcdv1alpha2.EtcdSnapshotScheduleSpec{ClusterRef: s.Spec.ClusterRef, Schedule: s.Spec.Schedule,
				Destination: plan.SnapshotLocation(s.Spec.Destination)},
		}
		if err := a.replaceLegacy(ctx, sched, legacy.EtcdBackupScheduleGVK, s.Name); err != nil {
			return err
		}
	}
	return nil
}

func migratedMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace,
		Annotations: map[string]string{etcdv1alpha2.AnnotationMigratedFrom: translate.MigratedFrom}}
}

// replaceLegacy creates obj unless it exists, then deletes the legacy object it replaces.
func (a *Adopter) replaceLegacy(ctx context.Context, obj client.Object, gvk schema.GroupVersionKind, name string) error {
	existing, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("%T is not a client.Object", obj)
	}
	err := a.Kube.Get(ctx, client.ObjectKeyFromObject(obj), existing)
	switch {
	case apierrors.IsNotFound(err):
		if err := a.Kube.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
		a.logf("created %T %s/%s", obj, obj.GetNamespace(), obj.GetName())
	case err != nil:
		return err
	}
	old := &unstructured.Unstructured{}
	old.SetGroupVersionKind(gvk)
	old.SetNamespace(obj.GetNamespace())
	old.SetName(name)
	if err := a.Kube.Delete(ctx, old); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting legacy %s %s: %w", gvk.Kind, name, err)
	}
	a.logf("deleted legacy %s %s/%s", gvk.Kind, obj.GetNamespace(), name)
	return nil
}
