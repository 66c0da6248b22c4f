package replacemember_test

import (
	"context"
	"flag"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/gate"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/gate/gatetest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/replacemember"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const target = "demo-x7k2p"

func env(t *testing.T, c *etcdv1alpha2.EtcdCluster, members ...*etcdv1alpha2.EtcdMember) *invocationtest.Env {
	t.Helper()
	return invocationtest.New(t, gatetest.Namespace, gatetest.Objects(c, members...)...)
}

func run(e *invocationtest.Env, member, reason string) error {
	return replacemember.Run(context.Background(), replacemember.Options{Cluster: gatetest.ClusterName, Member: member, Reason: reason}, e.Deps)
}

func annotated(m *etcdv1alpha2.EtcdMember, k, v string) *etcdv1alpha2.EtcdMember {
	m.Annotations = map[string]string{k: v}
	return m
}

func TestPlanGolden(t *testing.T) {
	for _, format := range []string{invocation.OutputText, invocation.OutputJSON} {
		e := env(t, gatetest.Cluster(3), gatetest.Healthy(3)...)
		e.Deps.Globals.Output = format
		if err := run(e, target, "disk errors on node-c"); err != nil {
			t.Fatal(err)
		}
		invocationtest.GoldenFile(t, "plan."+format, e.Out.Bytes(), *update)
	}
}

// TestQuorumRefusal: the replacement removes first, so a healthy member of a cluster with
// another member down cannot be replaced.
func TestQuorumRefusal(t *testing.T) {
	ms := gatetest.Healthy(3)
	gatetest.Unhealthy(ms[1], "NodeLost")
	e := env(t, gatetest.Cluster(3), ms...)
	w := e.RecordWrites(t)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	err := run(e, target, replacemember.DefaultReason)
	want := "removing demo-x7k2p would leave 1 healthy voter of 2; quorum needs 2; counted unhealthy: demo-7vx2m (Healthy=False/NodeLost)"
	if invocation.Code(err) != invocation.ExitRefused || !strings.Contains(err.Error(), "rule "+gate.RuleQuorum+": "+want) {
		t.Fatalf("got %v (exit %d), want exit 3 by rule %s: %s", err, invocation.Code(err), gate.RuleQuorum, want)
	}
	if len(w.Lines) != 0 {
		t.Errorf("a refused plan wrote %v", w.Lines)
	}
}

// TestReplacingTheBrokenMemberIsAllowed: the usual case, a member that is down.
func TestReplacingTheBrokenMemberIsAllowed(t *testing.T) {
	ms := gatetest.Healthy(3)
	gatetest.Unhealthy(ms[2], "CrashLoop")
	e := env(t, gatetest.Cluster(3), ms...)
	if err := run(e, target, "keeps crashing"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.Out.String(), "check ok      quorum: removing demo-x7k2p leaves 2 healthy voters of 2") {
		t.Errorf("plan does not show the gate allowing it:\n%s", e.Out)
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, member, rule string
		c                  *etcdv1alpha2.EtcdCluster
		members            []*etcdv1alpha2.EtcdMember
	}{
		{"unknown member", "demo-zzzzz", gate.RuleMemberOfCluster, gatetest.Cluster(3), gatetest.Healthy(3)},
		{"paused", target, gate.RulePaused, gatetest.Cluster(0), gatetest.Healthy(3)},
		{"being removed", target, gate.RuleMemberLeaving, gatetest.Cluster(3),
			[]*etcdv1alpha2.EtcdMember{gatetest.Member("demo-4kq9d", 1), gatetest.Member("demo-7vx2m", 2), annotated(gatetest.Member(target, 3), etcdv1alpha2.AnnotationRemovalReason, "ScaleDown")}},
		{"the only member", "demo-4kq9d", gate.RuleQuorum, gatetest.Cluster(1), gatetest.Healthy(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := env(t, tc.c, tc.members...)
			w := e.RecordWrites(t)
			e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
			err := run(e, tc.member, replacemember.DefaultReason)
			if invocation.Code(err) != invocation.ExitRefused || !strings.Contains(err.Error(), "rule "+tc.rule+":") {
				t.Fatalf("got %v (exit %d), want exit 3 naming rule %s", err, invocation.Code(err), tc.rule)
			}
			if len(w.Lines) != 0 {
				t.Errorf("a refused plan wrote %v", w.Lines)
			}
		})
	}
}

func TestAlreadyRequestedChangesNothing(t *testing.T) {
	ms := gatetest.Healthy(3)
	annotated(ms[2], etcdv1alpha2.AnnotationReplace, "same")
	e := env(t, gatetest.Cluster(3), ms...)
	w := e.RecordWrites(t)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	if err := run(e, target, "same"); err != nil {
		t.Fatal(err)
	}
	if len(w.Lines) != 0 || !strings.Contains(e.Out.String(), replacemember.RuleAlreadyRequested) {
		t.Errorf("wrote %v; plan:\n%s", w.Lines, e.Out)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	e := env(t, gatetest.Cluster(3), gatetest.Healthy(3)...)
	w := e.RecordWrites(t)
	if err := run(e, target, replacemember.DefaultReason); err != nil {
		t.Fatal(err)
	}
	if len(w.Lines) != 0 {
		t.Errorf("dry run wrote %v", w.Lines)
	}
}

func TestApplyWithoutTerminalOrYesIsExit2(t *testing.T) {
	e := env(t, gatetest.Cluster(3), gatetest.Healthy(3)...)
	w := e.RecordWrites(t)
	e.Deps.Globals.Apply = true
	err := run(e, target, replacemember.DefaultReason)
	if invocation.Code(err) != invocation.ExitUsage || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("got %v (exit %d), want exit 2 naming --yes", err, invocation.Code(err))
	}
	if len(w.Lines) != 0 {
		t.Errorf("unconfirmed apply wrote %v", w.Lines)
	}
}

func TestApplyWithYesMakesThePlannedPatch(t *testing.T) {
	e := env(t, gatetest.Cluster(3), gatetest.Healthy(3)...)
	w := e.RecordWrites(t)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	if err := run(e, target, "disk errors"); err != nil {
		t.Fatal(err)
	}
	want := []string{`patch EtcdMember tenant/demo-x7k2p {"metadata":{"annotations":{"etcd-operator.cozystack.io/replace":"disk errors"},"resourceVersion":"999"}}`}
	if !slices.Equal(w.Lines, want) {
		t.Fatalf("writes:\n%s\nwant:\n%s", strings.Join(w.Lines, "\n"), strings.Join(want, "\n"))
	}
}

// TestWaitFollowsUntilASuccessorIsReady: the operator's moves are played between polls.
func TestWaitFollowsUntilASuccessorIsReady(t *testing.T) {
	e := env(t, gatetest.Cluster(3), gatetest.Healthy(3)...)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes, e.Deps.Globals.Wait = true, true, true
	ctx := context.Background()
	done := make(chan error, 1)
	go func() { done <- run(e, target, "disk errors") }()
	invocationtest.Step(t, e, func() {
		m := &etcdv1alpha2.EtcdMember{}
		if err := e.Deps.Kube.Get(ctx, client.ObjectKey{Namespace: gatetest.Namespace, Name: target}, m); err != nil {
			t.Error(err)
		}
		if err := e.Deps.Kube.Delete(ctx, m); err != nil {
			t.Error(err)
		}
	})
	invocationtest.Step(t, e, func() {
		if err := e.Deps.Kube.Create(ctx, gatetest.Member("demo-n3w4m", 9)); err != nil {
			t.Error(err)
		}
	})
	if err := invocationtest.Wait(t, done); err != nil {
		t.Fatal(err)
	}
	progress := e.ErrOut.String()
	for _, want := range []string{"demo-x7k2p is still a member", "demo-x7k2p is gone; waiting for its successor", "demo-x7k2p is gone, replaced by demo-n3w4m; 3 of 3 members ready"} {
		if !strings.Contains(progress, want) {
			t.Errorf("progress does not say %q:\n%s", want, progress)
		}
	}
}
