package removemember_test

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
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/removemember"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const victim = "demo-x7k2p"

func env(t *testing.T, c *etcdv1alpha2.EtcdCluster, members ...*etcdv1alpha2.EtcdMember) *invocationtest.Env {
	t.Helper()
	return invocationtest.New(t, gatetest.Namespace, gatetest.Objects(c, members...)...)
}

func run(e *invocationtest.Env, member string) error {
	return removemember.Run(context.Background(), removemember.Options{Cluster: gatetest.ClusterName, Member: member}, e.Deps)
}

func cluster(t *testing.T, e *invocationtest.Env) *etcdv1alpha2.EtcdCluster {
	t.Helper()
	c := &etcdv1alpha2.EtcdCluster{}
	if err := e.Deps.Kube.Get(context.Background(), client.ObjectKey{Namespace: gatetest.Namespace, Name: gatetest.ClusterName}, c); err != nil {
		t.Fatal(err)
	}
	return c
}

func member(t *testing.T, e *invocationtest.Env, name string) *etcdv1alpha2.EtcdMember {
	t.Helper()
	m := &etcdv1alpha2.EtcdMember{}
	if err := e.Deps.Kube.Get(context.Background(), client.ObjectKey{Namespace: gatetest.Namespace, Name: name}, m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPlanGolden(t *testing.T) {
	for _, format := range []string{invocation.OutputText, invocation.OutputJSON} {
		e := env(t, gatetest.Cluster(3), gatetest.Healthy(3)...)
		e.Deps.Globals.Output = format
		if err := run(e, victim); err != nil {
			t.Fatal(err)
		}
		invocationtest.GoldenFile(t, "plan."+format, e.Out.Bytes(), *update)
	}
}

// TestQuorumRefusal: 3 voters, demo-4kq9d crash-looping; removing the healthy demo-x7k2p would
// leave 1 healthy voter of 2.
func TestQuorumRefusal(t *testing.T) {
	ms := gatetest.Healthy(3)
	gatetest.Unhealthy(ms[0], "CrashLoop")
	e := env(t, gatetest.Cluster(3), ms...)
	w := e.RecordWrites(t)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	err := run(e, victim)
	want := "removing demo-x7k2p would leave 1 healthy voter of 2; quorum needs 2"
	if invocation.Code(err) != invocation.ExitRefused || !strings.Contains(err.Error(), "rule "+gate.RuleQuorum) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v (exit %d), want exit 3 by rule %s saying %q", err, invocation.Code(err), gate.RuleQuorum, want)
	}
	if !strings.Contains(err.Error(), "demo-4kq9d (Healthy=False/CrashLoop)") {
		t.Errorf("refusal does not name the unhealthy voter: %v", err)
	}
	if len(w.Lines) != 0 {
		t.Errorf("a refused plan wrote %v", w.Lines)
	}
	invocationtest.GoldenFile(t, "refused-quorum.text", e.Out.Bytes(), *update)
}

// TestRemovingTheUnhealthyVoterIsAllowed: 3 voters with 2 healthy become 2 with 2 healthy.
func TestRemovingTheUnhealthyVoterIsAllowed(t *testing.T) {
	ms := gatetest.Healthy(3)
	gatetest.Unhealthy(ms[2], "CrashLoop")
	e := env(t, gatetest.Cluster(3), ms...)
	if err := run(e, victim); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.Out.String(), "removing demo-x7k2p leaves 2 healthy voters of 2; quorum needs 2") {
		t.Errorf("plan does not show the gate's verdict:\n%s", e.Out)
	}
}

func TestRefusals(t *testing.T) {
	annotated := func(m *etcdv1alpha2.EtcdMember, k, v string) *etcdv1alpha2.EtcdMember {
		m.Annotations = map[string]string{k: v}
		return m
	}
	pending := gatetest.Member("demo-new01", 9)
	pending.Spec.InitialCluster, pending.Status = "", etcdv1alpha2.EtcdMemberStatus{}
	foreign := gatetest.Member("other-a1b2c", 7)
	foreign.Labels[etcdv1alpha2.LabelCluster], foreign.Spec.ClusterName = "other", "other"
	for _, tc := range []struct {
		name, member, rule string
		c                  *etcdv1alpha2.EtcdCluster
		members            []*etcdv1alpha2.EtcdMember
	}{
		{"unknown member", "demo-zzzzz", gate.RuleMemberOfCluster, gatetest.Cluster(3), gatetest.Healthy(3)},
		{"another cluster's member", "other-a1b2c", gate.RuleMemberOfCluster, gatetest.Cluster(3), append(gatetest.Healthy(3), foreign)},
		{"paused", victim, gate.RulePaused, gatetest.Cluster(0), gatetest.Healthy(3)},
		{"last member", "demo-4kq9d", removemember.RuleMinReplicas, gatetest.Cluster(1), gatetest.Healthy(1)},
		{"already removed", victim, gate.RuleMemberLeaving, gatetest.Cluster(3),
			[]*etcdv1alpha2.EtcdMember{gatetest.Member("demo-4kq9d", 1), gatetest.Member("demo-7vx2m", 2), annotated(gatetest.Member(victim, 3), etcdv1alpha2.AnnotationRemovalReason, "Replace")}},
		{"another annotated member", victim, removemember.RuleVictim, gatetest.Cluster(3),
			[]*etcdv1alpha2.EtcdMember{annotated(gatetest.Member("demo-4kq9d", 1), etcdv1alpha2.AnnotationRemoveFirst, ""), gatetest.Member("demo-7vx2m", 2), gatetest.Member(victim, 3)}},
		{"a member never added to etcd goes first", victim, removemember.RuleVictim, gatetest.Cluster(4), append(gatetest.Healthy(3), pending)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := env(t, tc.c, tc.members...)
			w := e.RecordWrites(t)
			e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
			err := run(e, tc.member)
			if invocation.Code(err) != invocation.ExitRefused || !strings.Contains(err.Error(), "rule "+tc.rule+":") {
				t.Fatalf("got %v (exit %d), want exit 3 naming rule %s", err, invocation.Code(err), tc.rule)
			}
			if len(w.Lines) != 0 {
				t.Errorf("a refused plan wrote %v", w.Lines)
			}
		})
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	e := env(t, gatetest.Cluster(3), gatetest.Healthy(3)...)
	w := e.RecordWrites(t)
	if err := run(e, victim); err != nil {
		t.Fatal(err)
	}
	if len(w.Lines) != 0 {
		t.Errorf("dry run wrote %v", w.Lines)
	}
	if !strings.Contains(e.ErrOut.String(), "Dry run") {
		t.Errorf("stderr does not say it was a dry run: %q", e.ErrOut)
	}
}

func TestApplyWithoutTerminalOrYesIsExit2(t *testing.T) {
	e := env(t, gatetest.Cluster(3), gatetest.Healthy(3)...)
	w := e.RecordWrites(t)
	e.Deps.Globals.Apply = true
	err := run(e, victim)
	if invocation.Code(err) != invocation.ExitUsage || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("got %v (exit %d), want exit 2 naming --yes", err, invocation.Code(err))
	}
	if len(w.Lines) != 0 {
		t.Errorf("unconfirmed apply wrote %v", w.Lines)
	}
}

func TestApplyWithYesMakesThePlannedPatches(t *testing.T) {
	e := env(t, gatetest.Cluster(3), gatetest.Healthy(3)...)
	w := e.RecordWrites(t)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	if err := run(e, victim); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`patch EtcdMember tenant/demo-x7k2p {"metadata":{"annotations":{"etcd-operator.cozystack.io/remove-first":"true"},"resourceVersion":"999"}}`,
		`patch EtcdCluster tenant/demo {"metadata":{"resourceVersion":"999"},"spec":{"replicas":2}}`,
	}
	if !slices.Equal(w.Lines, want) {
		t.Fatalf("writes:\n%s\nwant:\n%s", strings.Join(w.Lines, "\n"), strings.Join(want, "\n"))
	}
	if got := *cluster(t, e).Spec.Replicas; got != 2 {
		t.Errorf("spec.replicas = %d, want 2", got)
	}
	if _, ok := member(t, e, victim).Annotations[etcdv1alpha2.AnnotationRemoveFirst]; !ok {
		t.Error("the member is not annotated remove-first")
	}
}

// TestWaitFollowsUntilTheMemberIsGone: the operator's work is played by editing the objects
// between polls; the fake clock advances each poll.
func TestWaitFollowsUntilTheMemberIsGone(t *testing.T) {
	e := env(t, gatetest.Cluster(3), gatetest.Healthy(3)...)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes, e.Deps.Globals.Wait = true, true, true
	done := make(chan error, 1)
	go func() { done <- run(e, victim) }()
	invocationtest.Step(t, e, func() {
		m := member(t, e, victim)
		if err := e.Deps.Kube.Delete(context.Background(), m); err != nil {
			t.Error(err)
		}
		c := cluster(t, e)
		c.Status.ReadyMembers = 2
		if err := e.Deps.Kube.Status().Update(context.Background(), c); err != nil {
			t.Error(err)
		}
	})
	if err := invocationtest.Wait(t, done); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.ErrOut.String(), "demo-x7k2p is gone; 2 of 2 members ready, Available=True/QuorumHealthy") {
		t.Errorf("progress does not end with the member gone:\n%s", e.ErrOut)
	}
}
