package etcdcluster

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
)

// Annotations that mark the default StorageClass: the GA one and the beta one the API server
// still honours.
const (
	annotationDefaultClass     = "storageclass.kubernetes.io/is-default-class"
	annotationBetaDefaultClass = "storageclass.beta.kubernetes.io/is-default-class"
)

// storageClasses is what a pass knows of StorageClasses: read only when some member PVC is
// smaller than the latched size, so an idle cluster never reads (nor watches) them.
type storageClasses struct {
	byName map[string]*storagev1.StorageClass
	// defaultName is the default class, the newest when several claim it (as the API
	// server's DefaultStorageClass admission picks it); empty without one.
	defaultName string
	// unreadable means the operator does not read StorageClasses (WithoutClusterScopedReads):
	// nothing is known of any class.
	unreadable bool
}

// latchedSize is the latched spec.storage.size of a PVC cluster (the API default when unset),
// nil for a Memory cluster or before anything is latched.
func latchedSize(o *etcdv1alpha2.ObservedClusterSpec) *resource.Quantity {
	if o == nil || o.Storage.Medium == etcdv1alpha2.StorageMediumMemory {
		return nil
	}
	q := desired.StorageSize(o.Storage)
	return &q
}

// observeStorageClasses reads the StorageClasses when some PVC is smaller than the latched size:
// whether its class allows expansion decides between growing it and reporting that it cannot.
func (r *Reconciler) observeStorageClasses(ctx context.Context, o *observation) (*storageClasses, error) {
	size := latchedSize(o.cluster.Status.Observed)
	if size == nil {
		return nil, nil
	}
	needed := false
	for i := range o.pvcs {
		if c := claimFrom(&o.pvcs[i], o.cluster, nil); !c.Holds(*size) {
			needed = true
			break
		}
	}
	if !needed {
		return nil, nil
	}
	if r.noStorageClassReads {
		return &storageClasses{unreadable: true}, nil
	}
	var list storagev1.StorageClassList
	if err := r.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing StorageClasses: %w", err)
	}
	sc := &storageClasses{byName: map[string]*storagev1.StorageClass{}}
	var newest *storagev1.StorageClass
	for i := range list.Items {
		c := &list.Items[i]
		sc.byName[c.Name] = c
		if c.Annotations[annotationDefaultClass] != "true" && c.Annotations[annotationBetaDefaultClass] != "true" {
			continue
		}
		if newest == nil || c.CreationTimestamp.After(newest.CreationTimestamp.Time) ||
			(c.CreationTimestamp.Equal(&newest.CreationTimestamp) && c.Name < newest.Name) {
			newest = c
		}
	}
	if newest != nil {
		sc.defaultName = newest.Name
	}
	return sc, nil
}
