//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestMemoryMemberReplaced deletes the Pod of one member of a 3-member Memory cluster. Its data
// went with the Pod, so the operator must not start it again empty: the member turns
// Healthy=False/DataLost, is removed from etcd and replaced by a new member. Converged at 3 with
// the lost member gone from Kubernetes and etcd, the same cluster ID; the heal time is recorded
// (issue #5 target: 6 s).
func TestMemoryMemberReplaced(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)
	requireOperator(f)
	const name = "memlost"
	ec := newCluster(f, name, 3)
	ec.Spec.Storage.Medium = etcdv1alpha2.StorageMediumMemory
	createCluster(f, ec)
	ec = waitConverged(f, name, 3, bootstrapTimeout)
	clusterID := ec.Status.ClusterID
	members, err := listMembers(f.Ctx, f, name)
	if err != nil || len(members) != 3 {
		t.Fatalf("members: %d, %v", len(members), err)
	}
	lost := members[1].Name

	start := time.Now()
	if err := f.Kube.CoreV1().Pods(f.Namespace).Delete(f.Ctx, lost, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = f.Poll(fmt.Sprintf("%s replaced", lost), scaleTimeout, func(ctx context.Context) (bool, string, error) {
		ms, err := listMembers(ctx, f, name)
		if err != nil {
			return false, err.Error(), nil
		}
		if slices.ContainsFunc(ms, func(m etcdv1alpha2.EtcdMember) bool { return m.Name == lost }) {
			return false, lost + " is still an EtcdMember", nil
		}
		got, err := getCluster(ctx, f, name)
		if err != nil {
			return false, err.Error(), nil
		}
		done, state := convergedState(ctx, f, got, 3)
		return done, state, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Record("memory-pod-lost-heal", since(start), "Memory member's Pod deleted → replaced, converged with 3 voters (issue #5 target ≤ 6 s)")
	ec = waitConverged(f, name, 3, scaleTimeout)
	if ec.Status.ClusterID != clusterID {
		t.Errorf("cluster ID %s after the replacement, was %s", ec.Status.ClusterID, clusterID)
	}
	ml, err := memberList(f.Ctx, f, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ml.Members {
		if m.Name == lost || peerName(firstOr(m.PeerURLs)) == lost {
			t.Errorf("etcd still lists the lost member %s", lost)
		}
	}
}
