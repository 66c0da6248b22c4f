package recovery_test

import (
	"context"
	"flag"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/gate/gatetest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/recovery"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const (
	candidate = "demo-x7k2p"
	value     = gatetest.ClusterID + "/" + candidate + "/10412"
	// note is the operator's Degraded message once it names the candidate
	// (docs/disaster-recovery.md, "When it needs your approval").
	note = "quorum lost; not Ready: demo-4kq9d, demo-7vx2m; waiting for demo-4kq9d (data lost), demo-7vx2m (down) to return; " +
		"if they cannot, approve recovery from demo-x7k2p (the most up-to-date log; writes only they hold are lost) by annotating the EtcdCluster " +
		etcdv1alpha2.AnnotationApproveRecovery + "=" + value
)

// lost is a 3-member cluster whose quorum is lost, with degraded as its Degraded message.
func lost(degraded string) *etcdv1alpha2.EtcdCluster {
	c := gatetest.Cluster(3)
	c.Status.ReadyMembers = 1
	meta.SetStatusCondition(&c.Status.Conditions, gatetest.Cond(etcdv1alpha2.ConditionAvailable, metav1.ConditionFalse, membership.ReasonQuorumLost,
		"1 of 3 voters Ready, quorum needs 2; not Ready: demo-4kq9d, demo-7vx2m"))
	meta.SetStatusCondition(&c.Status.Conditions, gatetest.Cond(etcdv1alpha2.ConditionDegraded, metav1.ConditionTrue, membership.ReasonQuorumLost, degraded))
	return c
}

func env(t *testing.T, c *etcdv1alpha2.EtcdCluster) *invocationtest.Env {
	t.Helper()
	ms := gatetest.Healthy(3)
	gatetest.Unhealthy(ms[0], "DataLost")
	gatetest.Unhealthy(ms[1], "Unreachable")
	return invocationtest.New(t, gatetest.Namespace, gatetest.Objects(c, ms...)...)
}

func run(e *invocationtest.Env, member string) error {
	return recovery.Run(context.Background(), recovery.Options{Cluster: gatetest.ClusterName, Member: member}, e.Deps)
}

func TestPlanGolden(t *testing.T) {
	for _, format := range []string{invocation.OutputText, invocation.OutputJSON} {
		e := env(t, lost(note))
		e.Deps.Globals.Output = format
		if err := run(e, ""); err != nil {
			t.Fatal(err)
		}
		invocationtest.GoldenFile(t, "plan."+format, e.Out.Bytes(), *update)
	}
}

func TestRefusals(t *testing.T) {
	running := lost(note)
	running.Status.QuorumRecovery = &etcdv1alpha2.QuorumRecovery{Member: candidate, MemberID: "3", Term: 2, Index: 10413, Mode: etcdv1alpha2.QuorumRecoveryApproved}
	for _, tc := range []struct {
		name, member, rule, says string
		c                        *etcdv1alpha2.EtcdCluster
	}{
		{"quorum is there", "", recovery.RuleQuorumLost, "does not report a lost quorum (Available=True/QuorumHealthy", gatetest.Cluster(3)},
		{"a recovery runs", "", recovery.RuleRecoveryRunning, "a recovery from demo-x7k2p (Approved", running},
		{"no candidate yet", "", recovery.RuleCandidate, "a recovery candidate is named after 10m0s",
			lost("quorum lost; not Ready: demo-4kq9d; waiting for demo-4kq9d (down) to return; nothing is replaced without a quorum (if they cannot return, a recovery candidate is named after 10m0s)")},
		{"another member", "demo-4kq9d", recovery.RuleCandidate, "the operator's candidate is demo-x7k2p", lost(note)},
		{"another cluster's value", "", recovery.RuleApprovalValue, "does not name cluster ID", lost(strings.ReplaceAll(note, gatetest.ClusterID, "0123456789abcdef"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := env(t, tc.c)
			w := e.RecordWrites(t)
			e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
			err := run(e, tc.member)
			if invocation.Code(err) != invocation.ExitRefused || !strings.Contains(err.Error(), "rule "+tc.rule+":") || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v (exit %d), want exit 3 by rule %s saying %q", err, invocation.Code(err), tc.rule, tc.says)
			}
			if len(w.Lines) != 0 {
				t.Errorf("a refused plan wrote %v", w.Lines)
			}
		})
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	e := env(t, lost(note))
	w := e.RecordWrites(t)
	if err := run(e, candidate); err != nil {
		t.Fatal(err)
	}
	if len(w.Lines) != 0 {
		t.Errorf("dry run wrote %v", w.Lines)
	}
}

func TestApplyWithoutTerminalOrYesIsExit2(t *testing.T) {
	e := env(t, lost(note))
	w := e.RecordWrites(t)
	e.Deps.Globals.Apply = true
	err := run(e, "")
	if invocation.Code(err) != invocation.ExitUsage || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("got %v (exit %d), want exit 2 naming --yes", err, invocation.Code(err))
	}
	if len(w.Lines) != 0 {
		t.Errorf("unconfirmed apply wrote %v", w.Lines)
	}
}

// TestApplyWritesExactlyTheOperatorsValue, also over a value the operator refused.
func TestApplyWritesExactlyTheOperatorsValue(t *testing.T) {
	refusal := "quorum lost; not Ready: demo-4kq9d, demo-7vx2m; the " + etcdv1alpha2.AnnotationApproveRecovery +
		` value "` + gatetest.ClusterID + `/demo-x7k2p/10400" does not match the current candidate: recovery from demo-x7k2p would need "` + value + `"`
	for _, degraded := range []string{note, refusal} {
		e := env(t, lost(degraded))
		w := e.RecordWrites(t)
		e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
		if err := run(e, candidate); err != nil {
			t.Fatal(err)
		}
		want := []string{`patch EtcdCluster tenant/demo {"metadata":{"annotations":{"etcd-operator.cozystack.io/approve-recovery":"` + value + `"},"resourceVersion":"999"}}`}
		if !slices.Equal(w.Lines, want) {
			t.Fatalf("writes:\n%s\nwant:\n%s", strings.Join(w.Lines, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestWaitFollowsTheRecovery: recorded, finished, grown back; the operator's moves are played
// between polls.
func TestWaitFollowsTheRecovery(t *testing.T) {
	e := env(t, lost(note))
	e.Deps.Globals.Apply, e.Deps.Globals.Yes, e.Deps.Globals.Wait = true, true, true
	ctx := context.Background()
	// edit applies f to the status, then to the rest: each update keeps the other part as
	// stored.
	edit := func(f func(c *etcdv1alpha2.EtcdCluster)) {
		for _, write := range []func(client.Object) error{
			func(o client.Object) error { return e.Deps.Kube.Status().Update(ctx, o) },
			func(o client.Object) error { return e.Deps.Kube.Update(ctx, o) },
		} {
			c := &etcdv1alpha2.EtcdCluster{}
			if err := e.Deps.Kube.Get(ctx, client.ObjectKey{Namespace: gatetest.Namespace, Name: gatetest.ClusterName}, c); err != nil {
				t.Error(err)
			}
			f(c)
			if err := write(c); err != nil {
				t.Error(err)
			}
		}
	}
	done := make(chan error, 1)
	go func() { done <- run(e, "") }()
	invocationtest.Step(t, e, func() {
		edit(func(c *etcdv1alpha2.EtcdCluster) {
			c.Status.QuorumRecovery = &etcdv1alpha2.QuorumRecovery{Member: candidate, MemberID: "3", Term: 2, Index: 10413, Mode: etcdv1alpha2.QuorumRecoveryApproved}
		})
	})
	invocationtest.Step(t, e, func() {
		edit(func(c *etcdv1alpha2.EtcdCluster) {
			c.Status.QuorumRecovery, c.Status.ReadyMembers = nil, 3
			delete(c.Annotations, etcdv1alpha2.AnnotationApproveRecovery)
			meta.SetStatusCondition(&c.Status.Conditions, gatetest.Cond(etcdv1alpha2.ConditionAvailable, metav1.ConditionTrue, "QuorumHealthy", "3 of 3 voters Ready"))
		})
	})
	if err := invocationtest.Wait(t, done); err != nil {
		t.Fatal(err)
	}
	progress := e.ErrOut.String()
	for _, want := range []string{"waiting for the operator to start the recovery", "recovering from demo-x7k2p (Approved)", "recovered: Available=True/QuorumHealthy, 3 of 3 members ready"} {
		if !strings.Contains(progress, want) {
			t.Errorf("progress does not say %q:\n%s", want, progress)
		}
	}
}

func TestWaitFailsWhenTheOperatorRefusesTheValue(t *testing.T) {
	e := env(t, lost(note))
	e.Deps.Globals.Apply, e.Deps.Globals.Yes, e.Deps.Globals.Wait = true, true, true
	ctx := context.Background()
	done := make(chan error, 1)
	go func() { done <- run(e, "") }()
	invocationtest.Step(t, e, func() {
		c := &etcdv1alpha2.EtcdCluster{}
		if err := e.Deps.Kube.Get(ctx, client.ObjectKey{Namespace: gatetest.Namespace, Name: gatetest.ClusterName}, c); err != nil {
			t.Error(err)
		}
		meta.SetStatusCondition(&c.Status.Conditions, gatetest.Cond(etcdv1alpha2.ConditionDegraded, metav1.ConditionTrue, membership.ReasonQuorumLost,
			"quorum lost; the "+etcdv1alpha2.AnnotationApproveRecovery+` value "`+value+`" does not match the current candidate: recovery from demo-x7k2p would need "`+gatetest.ClusterID+`/demo-x7k2p/10413"`))
		if err := e.Deps.Kube.Status().Update(ctx, c); err != nil {
			t.Error(err)
		}
	})
	err := invocationtest.Wait(t, done)
	if invocation.Code(err) != invocation.ExitError || !strings.Contains(err.Error(), "refused the approval") {
		t.Fatalf("got %v (exit %d), want exit 1 saying the operator refused", err, invocation.Code(err))
	}
}
