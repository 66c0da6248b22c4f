//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestRetainedDataSurvivesRecreate switches a running cluster created with reclaimPolicy Delete
// to Retain, deletes the EtcdCluster, re-creates it under the same name, and finds the same data
// (docs/design/storage.md, "Reclaim policy"): the switch reaches the existing PVCs (before, only
// new ones got it, and the deletion took the data), the PVCs survive the deletion, and the new
// cluster starts on them with the same cluster ID, member names, member IDs and keys, and owns
// them again under its own Delete policy.
func TestRetainedDataSurvivesRecreate(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t)
	requireOperator(f)
	const name = "kept"
	createCluster(f, newCluster(f, name, 3))
	ec := waitConverged(f, name, 3, bootstrapTimeout)
	clusterID := ec.Status.ClusterID
	idsBefore := checkMembership(f, ec, 3)
	want := writeKeys(f, name, "/kept/", 20)

	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"storage":{"reclaimPolicy":"Retain"}}}`))
	if err := kc(f).Patch(f.Ctx, &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace}}, patch); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitPVCs(f, name, "every PVC unowned and recording the cluster ID", func(owners int, recorded string) bool {
		return owners == 0 && recorded == clusterID
	})
	f.Record("reclaim-policy-applied", since(start), "Delete → Retain: every existing PVC unowned")

	deleteCluster(f, name)
	waitNothingLeft(f, name, true)

	start = time.Now()
	createCluster(f, newCluster(f, name, 3))
	ec = waitConverged(f, name, 3, 2*bootstrapTimeout)
	f.Record("recreate-on-retained-3", since(start), "re-created on 3 retained PVCs → converged")
	if ec.Status.ClusterID != clusterID {
		t.Errorf("re-created: status.clusterID %s, was %s", ec.Status.ClusterID, clusterID)
	}
	idsAfter := checkMembership(f, ec, 3)
	if !maps.Equal(idsAfter, idsBefore) {
		t.Errorf("re-created: members %v, before the deletion %v", idsAfter, idsBefore)
	}
	readKeys(f, name, want)
	waitPVCs(f, name, "the PVCs owned by the re-created cluster (Delete)", func(owners int, _ string) bool { return owners == 1 })
}

// waitPVCs waits until ok holds for every data PVC of cluster name: its number of owner
// references and its recorded cluster ID.
func waitPVCs(f *framework.Test, name, what string, ok func(owners int, recordedClusterID string) bool) {
	f.T.Helper()
	err := f.Poll(what, time.Minute, func(ctx context.Context) (bool, string, error) {
		pvcs, err := f.Kube.CoreV1().PersistentVolumeClaims(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
		if err != nil {
			return false, err.Error(), nil
		}
		if len(pvcs.Items) == 0 {
			return false, "no PVC", nil
		}
		var state []string
		done := true
		for _, p := range pvcs.Items {
			id := p.Annotations[etcdv1alpha2.AnnotationClusterID]
			done = done && ok(len(p.OwnerReferences), id)
			state = append(state, fmt.Sprintf("%s: %d owners, cluster-id %q", p.Name, len(p.OwnerReferences), id))
		}
		return done, fmt.Sprint(state), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
}
