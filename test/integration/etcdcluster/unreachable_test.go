package etcdcluster_test

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdmember"
	"github.com/etcd-operator/etcd-operator/internal/etcdview"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// TestUnreachableMemberReported runs both controllers on one etcdview.Board, as the operator does
// (docs/design/healing.md, "Verdicts from etcd's view"): a member whose Pod is Ready but whose
// endpoint stops answering Status becomes Healthy=Unknown/Unreachable, nothing destructive happens,
// and it is Healthy again once it answers.
func TestUnreachableMemberReported(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.kubeletOnly = true
	board := etcdview.NewBoard()
	w.memberOpts = append(w.memberOpts, etcdmember.WithEtcdViews(board))
	w.startController(etcdcluster.WithEtcdViews(board))
	w.newCluster("mute", 3)
	wait.Eventually(t, convergeTimeout, "3 members", w.converged("mute", 3))
	ms, err := w.members(t.Context(), "mute")
	if err != nil {
		t.Fatal(err)
	}
	victim := ms[0].Name
	before := len(w.fake("mute").Mutations())

	w.mute("mute", victim, true)
	w.touch("mute") // a pass now rather than at the next resync
	wait.Eventually(t, convergeTimeout, victim+" Healthy=Unknown/Unreachable", w.healthy("mute", victim, metav1.ConditionUnknown, health.ReasonUnreachable))
	if got := w.fake("mute").Mutations()[before:]; len(got) != 0 {
		t.Fatalf("membership changed because an endpoint did not answer: %v", got)
	}

	w.mute("mute", victim, false)
	w.touch("mute")
	wait.Eventually(t, convergeTimeout, victim+" Healthy=True again", w.healthy("mute", victim, metav1.ConditionTrue, health.ReasonHealthy))
}

// mute makes cluster's etcd member named member stop answering Status, or answer again, while
// it stays up and listed: the operator cannot reach its endpoint, though its Pod is Ready.
func (w *world) mute(cluster, member string, muted bool) {
	w.t.Helper()
	f := w.fake(cluster)
	for _, e := range f.Members() {
		if e.Name == member {
			if err := f.Mute(e.ID, muted); err != nil {
				w.t.Fatal(err)
			}
			return
		}
	}
	w.t.Fatalf("etcd lists no member %s", member)
}

// healthy checks member's Healthy condition.
func (w *world) healthy(cluster, member string, status metav1.ConditionStatus, reason string) func() error {
	return func() error {
		ms, err := w.members(context.Background(), cluster)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if m.Name != member {
				continue
			}
			h := meta.FindStatusCondition(m.Status.Conditions, etcdv1alpha2.ConditionHealthy)
			if h == nil || h.Status != status || h.Reason != reason {
				return fmt.Errorf("Healthy = %+v", h)
			}
			return nil
		}
		return fmt.Errorf("no member %s", member)
	}
}
