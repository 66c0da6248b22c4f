package etcdcluster_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// TestMemoryMemberLostIsReplaced runs both controllers on a 3-member Memory cluster and deletes
// one member's Pod: its data went with the Pod, so the EtcdMember controller marks it
// Healthy=False/DataLost without recreating the Pod, and the cluster controller removes it from
// etcd (quorum-gated), deletes it, and adds a new member: 3 members again, the lost one gone
// from both Kubernetes and etcd, and the cluster ID unchanged.
func TestMemoryMemberLostIsReplaced(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.kubeletOnly = true
	w.startController()
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "mem"},
		Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](3), Version: "3.6.5",
			Storage: etcdv1alpha2.StorageSpec{Medium: etcdv1alpha2.StorageMediumMemory, Size: ptr.To(resource.MustParse("1Gi"))}},
	}
	if err := w.createCluster(c); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, convergeTimeout, "3 members", w.converged("mem", 3))
	clusterID := w.cluster("mem").Status.ClusterID
	before, err := w.members(t.Context(), "mem")
	if err != nil || len(before) != 3 {
		t.Fatalf("members before: %d, %v", len(before), err)
	}
	lost := before[1]
	pod := &corev1.Pod{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: w.ns, Name: lost.Name}, pod); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(t.Context(), pod); err != nil {
		t.Fatal(err)
	}

	wait.Eventually(t, convergeTimeout, "the lost member replaced: 3 members, none of them "+lost.Name, func() error {
		if err := w.converged("mem", 3)(); err != nil {
			return err
		}
		ms, err := w.members(t.Context(), "mem")
		if err != nil {
			return err
		}
		if slices.ContainsFunc(ms, func(m etcdv1alpha2.EtcdMember) bool { return m.Name == lost.Name }) {
			return fmt.Errorf("%s is still a member: %w", lost.Name, errNotYet)
		}
		for _, e := range w.fake("mem").Members() {
			if e.Name == lost.Name || strings.Contains(strings.Join(e.PeerURLs, ","), lost.Name+".") {
				return fmt.Errorf("etcd still lists %s: %w", lost.Name, errNotYet)
			}
		}
		return nil
	})
	if got := w.cluster("mem").Status.ClusterID; got != clusterID {
		t.Errorf("cluster ID %s after the replacement, was %s", got, clusterID)
	}
	if removes := w.fake("mem").Count(etcdfake.MemberRemove); removes != 1 {
		t.Errorf("%d MemberRemove calls, want exactly one (the lost member): %v", removes, w.fake("mem").Mutations())
	}
}
