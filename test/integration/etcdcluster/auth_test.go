package etcdcluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// authRootPassword is root's password in etcd whose auth a test turns on behind the operator.
const authRootPassword = "the-snapshot-clusters-root-password"

// heldWindow is how long a held cluster is watched for a membership change after the pass that
// held it: several passes, since the operator requeues within a second after a spec change.
const heldWindow = 5 * time.Second

// enableAuthBehindTheOperator turns etcd auth on with user root through cli, the way the
// cluster a snapshot was taken from had it: a cluster restored from that snapshot starts with
// auth on and root's password of that cluster (docs/backup-restore.md, "Restore").
func enableAuthBehindTheOperator(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, step := range []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", authRootPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatalf("turning etcd auth on: %v", err)
		}
	}
}

// TestAuthRequiredNotConfigured runs both controllers over a real etcd member whose auth is
// turned on once the cluster formed, while the EtcdCluster has no spec.auth: what a cluster
// restored from a snapshot of a cluster with auth on presents. Available=False and
// Degraded=True name AuthRequiredNotConfigured with the fix, Progressing=False, one Warning is
// recorded; a replicas change is adopted but creates no member and sends etcd no membership
// change while the condition holds.
func TestAuthRequiredNotConfigured(t *testing.T) {
	t.Parallel()
	const name = "authon"
	w := newRealWorld(t)
	w.startController()
	w.newCluster(name, 1)
	wait.Eventually(t, realConvergeTimeout, "bootstrap of 1 real member", w.converged(name, 1))
	enableAuthBehindTheOperator(t, w.real.client(t))
	// Nothing watches etcd: the 30 s resync would find it; an annotation asks for a pass now.
	w.annotate(name, "test.etcd-operator/pass", "auth-on")

	for _, c := range []struct {
		typ    string
		status metav1.ConditionStatus
	}{
		{etcdv1alpha2.ConditionAvailable, metav1.ConditionFalse},
		{etcdv1alpha2.ConditionDegraded, metav1.ConditionTrue},
		{etcdv1alpha2.ConditionProgressing, metav1.ConditionFalse},
	} {
		wait.Eventually(t, convergeTimeout, c.typ+" "+membership.ReasonAuthRequiredNotConfigured,
			w.condition(name, c.typ, c.status, membership.ReasonAuthRequiredNotConfigured,
				"etcd has authentication on", "recreate the EtcdCluster", "spec.auth.rootCredentialsSecretRef.name"))
	}
	wait.Eventually(t, convergeTimeout, "one AuthRequiredNotConfigured Warning", w.eventsOnce(name, membership.ReasonAuthRequiredNotConfigured))

	done := len(w.real.mutations())
	w.setReplicas(name, 3)
	wait.Eventually(t, convergeTimeout, "replicas 3 adopted, and a pass held", func() error {
		c := w.cluster(name)
		p := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionProgressing)
		if c.Status.ObservedGeneration != c.Generation || p == nil || p.ObservedGeneration != c.Generation ||
			p.Reason != membership.ReasonAuthRequiredNotConfigured {
			return fmt.Errorf("generation %d, observed %d, Progressing %+v: %w", c.Generation, c.Status.ObservedGeneration, p, errNotYet)
		}
		return nil
	})
	wait.Consistently(t, heldWindow, "no member created, no membership change sent", func() error {
		ms, err := w.members(t.Context(), name)
		if err != nil {
			return err
		}
		if len(ms) != 1 {
			return fmt.Errorf("%d EtcdMembers while auth holds the cluster", len(ms))
		}
		if calls := w.real.mutations()[done:]; len(calls) > 0 {
			return fmt.Errorf("membership changes sent while auth holds the cluster: %v", calls)
		}
		return nil
	})
	if n := rootMembers(t, w); n != 1 {
		t.Errorf("etcd lists %d members, asked as root; want 1", n)
	}
	if err := w.eventsOnce(name, membership.ReasonAuthRequiredNotConfigured)(); err != nil {
		t.Errorf("the Warning was repeated: %v", err)
	}
}

// rootMembers counts etcd's members, asked as root: without credentials etcd refuses MemberList
// once auth is on.
func rootMembers(t *testing.T, w *world) int {
	t.Helper()
	anon := w.real.client(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: anon.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop(),
		Username: "root", Password: authRootPassword})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cli.Close() }()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatalf("MemberList as root: %v", err)
	}
	return len(resp.Members)
}

// TestAuthOffNeverAuthRequiredNotConfigured: a cluster without spec.auth whose etcd has auth off
// forms and grows 1 → 3 without the reason ever showing, and without the operator once asking
// etcd whether auth is on: only a restore or a refusal makes it ask.
func TestAuthOffNeverAuthRequiredNotConfigured(t *testing.T) {
	t.Parallel()
	const name = "authoff"
	w := newRealWorld(t)
	w.startController()
	w.newCluster(name, 1)
	never := func() {
		for _, c := range w.cluster(name).Status.Conditions {
			if c.Reason == membership.ReasonAuthRequiredNotConfigured {
				t.Fatalf("%s = %s/%s on a cluster whose etcd has auth off", c.Type, c.Status, c.Reason)
			}
		}
	}
	converged := func(n int) func() error {
		return func() error { never(); return w.converged(name, n)() }
	}
	wait.Eventually(t, realConvergeTimeout, "bootstrap of 1 real member", converged(1))
	w.setReplicas(name, 3)
	wait.Eventually(t, 2*realConvergeTimeout, "grown to 3 real members", converged(3))
	if n := w.real.probes(); n != 0 {
		t.Errorf("%d AuthStatus calls for a cluster neither restored nor refused", n)
	}
	var evs eventsv1.EventList
	if err := k8s.List(t.Context(), &evs, client.InNamespace(w.ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Reason == membership.ReasonAuthRequiredNotConfigured {
			t.Errorf("Event %s: %s", e.Reason, e.Note)
		}
	}
}
