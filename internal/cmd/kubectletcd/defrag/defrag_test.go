package defrag_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/defrag"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve/etcdobservetest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/follow"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/golden"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
)

const runName = "demo-manual-20261201-120000"

// converged is the fixture reporting Progressing=False/Reconciled, with demo-b holding 300Mi
// to reclaim.
func converged() *etcdobservetest.Fixture {
	f := etcdobservetest.ThreeMembers()
	meta.SetStatusCondition(&f.Cluster.Status.Conditions, metav1.Condition{
		Type: etcdv1alpha2.ConditionProgressing, Status: metav1.ConditionFalse, Reason: "Reconciled", ObservedGeneration: f.Cluster.Generation,
	})
	st := f.Statuses["demo-b"]
	st.DBSize, st.DBSizeInUse = 400<<20, 100<<20
	f.Statuses["demo-b"] = st
	return f
}

func run(e *invocationtest.Env, o defrag.Options) error {
	o.Cluster = etcdobservetest.Cluster
	return defrag.Run(context.Background(), o, e.Deps)
}

func runs(t *testing.T, e *invocationtest.Env) []etcdv1alpha2.EtcdDefrag {
	t.Helper()
	var l etcdv1alpha2.EtcdDefragList
	if err := e.Deps.Kube.List(context.Background(), &l, client.InNamespace(etcdobservetest.Namespace)); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func TestPlanPreviewsTheRule(t *testing.T) {
	for _, format := range []string{invocation.OutputText, invocation.OutputJSON} {
		e := converged().Env(t)
		e.Deps.Globals.Output = format
		if err := run(e, defrag.Options{}); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "plan."+format, e.Out.Bytes())
		if n := len(runs(t, e)); n != 0 {
			t.Errorf("dry run created %d EtcdDefrags", n)
		}
		if m := etcdobservetest.Mutating(e.Etcd.Calls); len(m) != 0 {
			t.Errorf("dry run called %v", m)
		}
	}
}

func TestPlanOfAClusterNotConverged(t *testing.T) {
	e := etcdobservetest.ThreeMembers().Env(t)
	e.Deps.Globals.NoEtcd = true
	if err := run(e, defrag.Options{Rule: &etcdv1alpha2.DefragRule{All: true}}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "plan-waits-no-etcd.text", e.Out.Bytes())
	if len(e.Etcd.Calls) != 0 {
		t.Errorf("--no-etcd called etcd: %v", e.Etcd.Calls)
	}
}

func TestApplyCreatesTheRun(t *testing.T) {
	e := converged().Env(t)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	rule, err := defrag.ParseRule("quota-usage=70%,min-reclaim=64Mi")
	if err != nil {
		t.Fatal(err)
	}
	if err := run(e, defrag.Options{Rule: rule}); err != nil {
		t.Fatal(err)
	}
	got := runs(t, e)
	if len(got) != 1 {
		t.Fatalf("%d EtcdDefrags, want 1", len(got))
	}
	r := got[0]
	if r.Name != runName || r.Spec.ClusterRef.Name != "demo" || r.Labels[etcdv1alpha2.LabelCluster] != "demo" ||
		r.Spec.Rule == nil || r.Spec.Rule.QuotaUsageAbove != "70%" || r.Spec.Rule.MinReclaim.String() != "64Mi" {
		t.Errorf("created %s %v labels %v", r.Name, r.Spec, r.Labels)
	}
	if m := etcdobservetest.Mutating(e.Etcd.Calls); len(m) != 0 {
		t.Errorf("the plugin called etcd itself: %v", m)
	}
}

// waitFor polls cond in real time: the command runs in another goroutine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWaitFollowsTheRunToItsEnd(t *testing.T) {
	for _, phase := range []etcdv1alpha2.DefragPhase{etcdv1alpha2.DefragPhaseComplete, etcdv1alpha2.DefragPhaseFailed} {
		e := converged().Env(t)
		e.Deps.Globals.Apply, e.Deps.Globals.Yes, e.Deps.Globals.Wait = true, true, true
		done := make(chan error, 1)
		go func() { done <- run(e, defrag.Options{}) }()
		waitFor(t, "the first look at the run", e.Clock.HasWaiters)
		r := runs(t, e)[0]
		r.Status.Phase = phase
		r.Status.Defragmented = 1
		r.Status.Members = []etcdv1alpha2.DefragMemberStatus{
			{Name: "demo-b", Outcome: etcdv1alpha2.DefragOutcomeDefragmented}, {Name: "demo-c", Outcome: etcdv1alpha2.DefragOutcomeSkipped},
		}
		meta.SetStatusCondition(&r.Status.Conditions, metav1.Condition{Type: etcdv1alpha2.ConditionReady, Status: metav1.ConditionTrue, Reason: string(phase), Message: "1 defragmented, 1 skipped"})
		// The fake client has no status subresource for EtcdDefrag: Update writes the status.
		if err := e.Deps.Kube.Update(context.Background(), &r); err != nil {
			t.Fatal(err)
		}
		e.Clock.Step(follow.Interval)
		err := <-done
		if (phase == etcdv1alpha2.DefragPhaseFailed) != (invocation.Code(err) == invocation.ExitError) {
			t.Errorf("%s: got %v (exit %d)", phase, err, invocation.Code(err))
		}
		progress := e.ErrOut.String()
		for _, want := range []string{runName + " Pending (the operator has not picked it up yet)", runName + " " + string(phase) + ", members: 1 defragmented, 0 pending, 0 failed, 1 skipped"} {
			if !strings.Contains(progress, want) {
				t.Errorf("%s: progress lacks %q:\n%s", phase, want, progress)
			}
		}
	}
}

func TestPausedClusterIsRefusedWithExit3(t *testing.T) {
	f := converged()
	f.Cluster.Spec.Replicas = ptr.To[int32](0)
	e := f.Env(t)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	err := run(e, defrag.Options{})
	if invocation.Code(err) != invocation.ExitRefused || !strings.Contains(err.Error(), defrag.RuleClusterPaused) {
		t.Fatalf("got %v (exit %d), want exit 3 by %s", err, invocation.Code(err), defrag.RuleClusterPaused)
	}
	if n := len(runs(t, e)); n != 0 {
		t.Errorf("a refused defrag created %d EtcdDefrags", n)
	}
}

func TestRunInFlightIsRefusedWithExit3(t *testing.T) {
	f := converged()
	f.Extra = append(f.Extra, &etcdv1alpha2.EtcdDefrag{
		ObjectMeta: metav1.ObjectMeta{Namespace: etcdobservetest.Namespace, Name: "nightly-29409120"},
		Spec:       etcdv1alpha2.EtcdDefragSpec{ClusterRef: corev1Ref("demo")},
		Status:     etcdv1alpha2.EtcdDefragStatus{Phase: etcdv1alpha2.DefragPhaseRunning},
	}, &etcdv1alpha2.EtcdDefrag{
		ObjectMeta: metav1.ObjectMeta{Namespace: etcdobservetest.Namespace, Name: "old"},
		Spec:       etcdv1alpha2.EtcdDefragSpec{ClusterRef: corev1Ref("demo")},
		Status:     etcdv1alpha2.EtcdDefragStatus{Phase: etcdv1alpha2.DefragPhaseComplete},
	})
	e := f.Env(t)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	err := run(e, defrag.Options{})
	if invocation.Code(err) != invocation.ExitRefused || !strings.Contains(err.Error(), defrag.RuleRunInFlight) ||
		!strings.Contains(err.Error(), "nightly-29409120 (Running)") || strings.Contains(err.Error(), "old") {
		t.Fatalf("got %v (exit %d), want exit 3 by %s naming the running run only", err, invocation.Code(err), defrag.RuleRunInFlight)
	}
	if n := len(runs(t, e)); n != 2 {
		t.Errorf("a refused defrag left %d EtcdDefrags, want the 2 there were", n)
	}
}

func TestMemberIsAUsageError(t *testing.T) {
	e := converged().Env(t)
	err := run(e, defrag.Options{Member: "demo-b"})
	if invocation.Code(err) != invocation.ExitUsage || !strings.Contains(err.Error(), "no member selector") {
		t.Fatalf("got %v (exit %d), want exit 2", err, invocation.Code(err))
	}
}

func TestApplyWithoutTerminalOrYesIsRefusedWithExit2(t *testing.T) {
	e := converged().Env(t)
	e.Deps.Globals.Apply = true
	err := run(e, defrag.Options{})
	if invocation.Code(err) != invocation.ExitUsage || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("got %v (exit %d), want exit 2 naming --yes", err, invocation.Code(err))
	}
	if n := len(runs(t, e)); n != 0 {
		t.Errorf("an unconfirmed defrag created %d EtcdDefrags", n)
	}
}

func TestParseRule(t *testing.T) {
	for in, want := range map[string]string{
		"":                                "<nil>",
		"all":                             "all",
		"free-space=500Mi":                "free=500Mi",
		"quota-usage=80%":                 "quota=80%",
		"quota-usage=80%,min-reclaim=1Gi": "quota=80% min=1Gi",
		"free-space=1Gi, quota-usage=70%": "free=1Gi quota=70%",
	} {
		r, err := defrag.ParseRule(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := ruleString(r); got != want {
			t.Errorf("%q: got %s, want %s", in, got, want)
		}
	}
	for _, in := range []string{"every", "free-space=0", "free-space=lots", "quota-usage=0%", "quota-usage=101%", "quota-usage=80",
		"min-reclaim=32Mi", "quota-usage=80%,min-reclaim=300Mi,free-space=200Mi", "size=1Gi"} {
		if _, err := defrag.ParseRule(in); invocation.Code(err) != invocation.ExitUsage {
			t.Errorf("%q: got %v, want exit 2", in, err)
		}
	}
}

func ruleString(r *etcdv1alpha2.DefragRule) string {
	if r == nil {
		return "<nil>"
	}
	if r.All {
		return "all"
	}
	var parts []string
	if r.FreeSpaceAbove != nil {
		parts = append(parts, "free="+r.FreeSpaceAbove.String())
	}
	if r.QuotaUsageAbove != "" {
		parts = append(parts, "quota="+r.QuotaUsageAbove)
	}
	if r.MinReclaim != nil {
		parts = append(parts, "min="+r.MinReclaim.String())
	}
	return strings.Join(parts, " ")
}

func corev1Ref(name string) corev1.LocalObjectReference {
	return corev1.LocalObjectReference{Name: name}
}
