package phase

import (
	"context"
	"fmt"
	"slices"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

// Discovery is what a run found: legacy clusters to plan, adoptions to finish, and the legacy
// backup objects.
type Discovery struct {
	// Clusters are the legacy EtcdClusters selected, sorted by namespace and name.
	Clusters []*legacy.EtcdCluster
	// Resume are this project's EtcdClusters an earlier run created (migrated-from) whose
	// adoption is not finished: still annotated adoption-in-progress, or with legacy backup
	// objects left to carry over. Their legacy EtcdCluster may be gone already (step 4).
	Resume []*etcdv1alpha2.EtcdCluster
	// Backups and Schedules are the legacy backup objects, by namespace/cluster.
	Backups   map[string][]legacy.EtcdBackup
	Schedules map[string][]legacy.EtcdBackupSchedule
	// SnapshotScheduleServed says this project's EtcdSnapshotSchedule kind is served.
	SnapshotScheduleServed bool
}

// Key is namespace/name.
func Key(namespace, name string) string { return namespace + "/" + name }

// Discover lists the legacy kinds in namespace ("" = all) and keeps the clusters named in names
// (empty = all). Missing legacy CRDs mean no such objects: the backup kinds exist only in later
// legacy releases, and a namespace with nothing legacy left has nothing to do.
func Discover(ctx context.Context, r client.Reader, namespace string, names []string) (*Discovery, error) {
	d := &Discovery{Backups: map[string][]legacy.EtcdBackup{}, Schedules: map[string][]legacy.EtcdBackupSchedule{}}
	items, err := listLegacy(ctx, r, legacy.EtcdClusterGVK, namespace)
	if err != nil {
		return nil, err
	}
	for i := range items {
		c, err := legacy.DecodeCluster(&items[i])
		if err != nil {
			return nil, err
		}
		// A legacy cluster being deleted was released by step 4 of an earlier run: its
		// adoption is finished from the new objects (Resume), never planned afresh.
		if selected(names, c.Name) && c.DeletionTimestamp == nil {
			d.Clusters = append(d.Clusters, c)
		}
	}
	if err := d.discoverBackups(ctx, r, namespace); err != nil {
		return nil, err
	}
	if d.SnapshotScheduleServed, err = served(ctx, r, &etcdv1alpha2.EtcdSnapshotScheduleList{}, namespace); err != nil {
		return nil, err
	}
	if err := d.discoverResume(ctx, r, namespace, names); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Discovery) discoverBackups(ctx context.Context, r client.Reader, namespace string) error {
	backups, err := listLegacy(ctx, r, legacy.EtcdBackupGVK, namespace)
	if err != nil {
		return err
	}
	for i := range backups {
		b, err := legacy.DecodeBackup(&backups[i])
		if err != nil {
			return err
		}
		k := Key(b.Namespace, b.Spec.ClusterRef.Name)
		d.Backups[k] = append(d.Backups[k], *b)
	}
	schedules, err := listLegacy(ctx, r, legacy.EtcdBackupScheduleGVK, namespace)
	if err != nil {
		return err
	}
	for i := range schedules {
		s, err := legacy.DecodeBackupSchedule(&schedules[i])
		if err != nil {
			return err
		}
		k := Key(s.Namespace, s.Spec.ClusterRef.Name)
		d.Schedules[k] = append(d.Schedules[k], *s)
	}
	return nil
}

// discoverResume finds adoptions an earlier run began and did not finish, and whose legacy
// EtcdCluster is gone (those with one are planned afresh, and their done steps skipped).
func (d *Discovery) discoverResume(ctx context.Context, r client.Reader, namespace string, names []string) error {
	var list etcdv1alpha2.EtcdClusterList
	if err := r.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing EtcdClusters: %w", err)
	}
	for i := range list.Items {
		c := &list.Items[i]
		if c.Annotations[etcdv1alpha2.AnnotationMigratedFrom] == "" || !selected(names, c.Name) || d.hasLegacy(c) {
			continue
		}
		k := Key(c.Namespace, c.Name)
		pendingBackups := len(d.Backups[k]) > 0 || (d.SnapshotScheduleServed && len(d.Schedules[k]) > 0)
		if c.Annotations[etcdv1alpha2.AnnotationAdoptionInProgress] != "" || pendingBackups || membersInProgress(ctx, r, c) {
			d.Resume = append(d.Resume, c)
		}
	}
	return nil
}

func (d *Discovery) hasLegacy(c *etcdv1alpha2.EtcdCluster) bool {
	return slices.ContainsFunc(d.Clusters, func(l *legacy.EtcdCluster) bool { return l.Namespace == c.Namespace && l.Name == c.Name })
}

// membersInProgress: step 8 removes the members' annotation before the cluster's, so a run
// stopped in between leaves members to finish. A read error counts as in progress: resuming
// does only what is left.
func membersInProgress(ctx context.Context, r client.Reader, c *etcdv1alpha2.EtcdCluster) bool {
	var members etcdv1alpha2.EtcdMemberList
	if err := r.List(ctx, &members, client.InNamespace(c.Namespace), client.MatchingLabels{etcdv1alpha2.LabelCluster: c.Name}); err != nil {
		return true
	}
	for _, m := range members.Items {
		if m.Annotations[etcdv1alpha2.AnnotationAdoptionInProgress] != "" {
			return true
		}
	}
	return false
}

func selected(names []string, name string) bool {
	return len(names) == 0 || slices.Contains(names, name)
}

// listLegacy lists a legacy kind as unstructured objects (the legacy kinds are not in any
// scheme), sorted; a kind that is not served lists nothing.
func listLegacy(ctx context.Context, r client.Reader, gvk schema.GroupVersionKind, namespace string) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := r.List(ctx, list, client.InNamespace(namespace)); err != nil {
		if notServed(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing legacy %s: %w", gvk.Kind, err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return Key(list.Items[i].GetNamespace(), list.Items[i].GetName()) < Key(list.Items[j].GetNamespace(), list.Items[j].GetName())
	})
	return list.Items, nil
}

func served(ctx context.Context, r client.Reader, list client.ObjectList, namespace string) (bool, error) {
	err := r.List(ctx, list, client.InNamespace(namespace), client.Limit(1))
	switch {
	case err == nil:
		return true, nil
	case notServed(err):
		return false, nil
	}
	return false, fmt.Errorf("checking whether %T is served: %w", list, err)
}

func notServed(err error) bool {
	return meta.IsNoMatchError(err) || apierrors.IsNotFound(err)
}
