//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestDeletion deletes converged clusters (docs/design/membership-flows.md, "Cluster deletion"):
// with reclaimPolicy Delete every EtcdMember, Pod, Service, the PDB and every PVC go; with Retain
// the PVCs survive, still labelled, and everything else goes.
func TestDeletion(t *testing.T) {
	t.Parallel()
	for _, policy := range []etcdv1alpha2.ReclaimPolicy{etcdv1alpha2.ReclaimPolicyDelete, etcdv1alpha2.ReclaimPolicyRetain} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			f := framework.NewTest(t, framework.Smoke)
			requireOperator(f)
			name := "del-" + strings.ToLower(string(policy))
			ec := newCluster(f, name, 1)
			ec.Spec.Storage.ReclaimPolicy = policy
			createCluster(f, ec)
			ec = waitConverged(f, name, 1, bootstrapTimeout)
			checkMembership(f, ec, 1)
			pvcs, err := f.Kube.CoreV1().PersistentVolumeClaims(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
			if err != nil {
				t.Fatal(err)
			}
			if len(pvcs.Items) != 1 {
				t.Fatalf("%d PVCs before deletion, want 1", len(pvcs.Items))
			}
			start := time.Now()
			deleteCluster(f, name)
			waitNothingLeft(f, name, policy == etcdv1alpha2.ReclaimPolicyRetain)
			f.Record("delete-"+strings.ToLower(string(policy)), since(start), "delete → everything gone (PVCs kept with Retain)")
		})
	}
}

// waitNothingLeft waits until the EtcdCluster, its EtcdMembers, Pods, Services and PDB are gone,
// and its PVCs too unless retain, in which case they must all still exist.
func waitNothingLeft(f *framework.Test, name string, retain bool) {
	f.T.Helper()
	pvcsBefore, err := f.Kube.CoreV1().PersistentVolumeClaims(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
	if err != nil {
		f.T.Fatal(err)
	}
	err = f.Poll(fmt.Sprintf("EtcdCluster %s and its objects gone", name), goneTimeout, func(ctx context.Context) (bool, string, error) {
		left, err := leftovers(ctx, f, name, retain)
		if err != nil {
			return false, err.Error(), nil
		}
		return len(left) == 0, fmt.Sprintf("left: %v", left), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	if retain {
		checkRetainedPVCs(f, name, len(pvcsBefore.Items))
	}
}

// checkRetainedPVCs asserts that the cluster's want PVCs survived its deletion, ownerless and not
// being deleted.
func checkRetainedPVCs(f *framework.Test, name string, want int) {
	f.T.Helper()
	pvcs, err := f.Kube.CoreV1().PersistentVolumeClaims(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
	if err != nil {
		f.T.Fatal(err)
	}
	if len(pvcs.Items) != want {
		f.T.Fatalf("reclaimPolicy Retain: %d labelled PVCs after deletion, want the %d from before", len(pvcs.Items), want)
	}
	for _, p := range pvcs.Items {
		if p.DeletionTimestamp != nil {
			f.T.Errorf("reclaimPolicy Retain: PVC %s is being deleted", p.Name)
		}
		if len(p.OwnerReferences) != 0 {
			f.T.Errorf("reclaimPolicy Retain: PVC %s has owners %v", p.Name, p.OwnerReferences)
		}
	}
}

// leftovers lists what of the cluster still exists in the test namespace: the EtcdCluster, its
// EtcdMembers and Pods, any Service or PDB, and any PVC unless retain.
func leftovers(ctx context.Context, f *framework.Test, name string, retain bool) ([]string, error) {
	var left []string
	if _, err := getCluster(ctx, f, name); err == nil {
		left = append(left, "EtcdCluster")
	}
	members, err := listMembers(ctx, f, name)
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		left = append(left, "EtcdMember/"+m.Name)
	}
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
	if err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		left = append(left, "Pod/"+p.Name)
	}
	svcs, err := f.Kube.CoreV1().Services(f.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, s := range svcs.Items {
		left = append(left, "Service/"+s.Name)
	}
	pdbs, err := f.Kube.PolicyV1().PodDisruptionBudgets(f.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, p := range pdbs.Items {
		left = append(left, "PodDisruptionBudget/"+p.Name)
	}
	if retain {
		return left, nil
	}
	pvcs, err := f.Kube.CoreV1().PersistentVolumeClaims(f.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, p := range pvcs.Items {
		left = append(left, "PVC/"+p.Name)
	}
	return left, nil
}
