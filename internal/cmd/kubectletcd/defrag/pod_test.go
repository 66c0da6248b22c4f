package defrag_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/defrag"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve/etcdobservetest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/golden"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// legacy is a formed three-member legacy cluster "old" as pod mode sees it: old-0 leads.
func legacy(t *testing.T, variant legacyfixture.Variant) *etcdobservetest.Fixture {
	t.Helper()
	s, err := legacyfixture.Build(legacyfixture.Options{Name: "old", Namespace: etcdobservetest.Namespace, Variant: variant, Formed: true})
	if err != nil {
		t.Fatal(err)
	}
	return etcdobservetest.Pods(s.ExpectedPods()...)
}

func runPod(e *invocationtest.Env, o defrag.Options) error {
	return defrag.RunPod(context.Background(), o, e.Deps)
}

func TestPodPlanDefragmentsTheFollowerDirectly(t *testing.T) {
	for _, format := range []string{invocation.OutputText, invocation.OutputJSON} {
		e := legacy(t, legacyfixture.Plaintext).PodEnv(t, "old-1")
		e.Deps.Globals.Output = format
		if err := runPod(e, defrag.Options{}); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "pod-plan."+format, e.Out.Bytes())
		if m := etcdobservetest.Mutating(e.Etcd.Calls); len(m) != 0 {
			t.Errorf("dry run called %v", m)
		}
		if !slices.Equal(e.Etcd.DialledPods, []string{"old-1"}) {
			t.Errorf("pod mode dialled %v, want old-1 alone", e.Etcd.DialledPods)
		}
	}
}

func TestPodApplyDefragmentsThroughThePod(t *testing.T) {
	e := legacy(t, legacyfixture.TLS).PodEnv(t, "old-2")
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	if err := runPod(e, defrag.Options{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"Defragment " + invocationtest.Endpoint("old-2")}
	if got := etcdobservetest.Mutating(e.Etcd.Calls); !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	if !strings.Contains(e.ErrOut.String(), "Defragmented old-2") {
		t.Errorf("stderr does not report the defragmentation:\n%s", e.ErrOut)
	}
}

// TestPodPlanRefusals checks each rule of a pod-mode defrag (docs/kubectl-etcd.md,
// "Compatibility mode (--pod)") refuses with exit 3 and calls nothing.
func TestPodPlanRefusals(t *testing.T) {
	cases := []struct {
		name, pod, rule string
		change          func(*etcdobservetest.Fixture)
	}{{
		name: "the other voters' Pods are not Ready: margin 0", pod: "old-1", rule: defrag.RuleQuorumMargin,
		change: func(f *etcdobservetest.Fixture) { notReady(f, "old-0"); notReady(f, "old-2") },
	}, {
		name: "one other voter's Pod is gone: margin 0 in a cluster of three", pod: "old-1", rule: defrag.RuleQuorumMargin,
		change: func(f *etcdobservetest.Fixture) { delete(f.Pods, "old-2") },
	}, {
		name: "the only voter", pod: "old-0", rule: defrag.RuleQuorumMargin,
		change: func(f *etcdobservetest.Fixture) {
			f.EtcdMembers = f.EtcdMembers[:1]
			delete(f.Pods, "old-1")
			delete(f.Pods, "old-2")
		},
	}, {
		name: "the leader", pod: "old-0", rule: defrag.RuleNotLeader,
		change: func(*etcdobservetest.Fixture) {},
	}, {
		name: "the Pod's etcd does not answer", pod: "old-1", rule: defrag.RuleMemberAnswered,
		change: func(f *etcdobservetest.Fixture) { delete(f.Statuses, "old-1") },
	}, {
		name: "its EtcdCluster is Progressing", pod: "old-1", rule: defrag.RuleOperatorBusy,
		change: func(f *etcdobservetest.Fixture) {
			f.Pods["old-1"].Labels[etcdv1alpha2.LabelCluster] = "old"
			c := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: etcdobservetest.Namespace, Name: "old"}}
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: etcdv1alpha2.ConditionProgressing, Status: metav1.ConditionTrue, Reason: "RollingUpdate"})
			f.Extra = append(f.Extra, c)
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := legacy(t, legacyfixture.Plaintext)
			tc.change(f)
			e := f.PodEnv(t, tc.pod)
			e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
			err := runPod(e, defrag.Options{})
			var r *invocation.RefusedError
			if !errors.As(err, &r) || r.Rule != tc.rule {
				t.Fatalf("want a refusal by %s, got %v\n%s", tc.rule, err, e.Out)
			}
			if m := etcdobservetest.Mutating(e.Etcd.Calls); len(m) != 0 {
				t.Errorf("a refused plan called %v", m)
			}
		})
	}
}

func TestPodPlanAllowsALearnerAndASettledCluster(t *testing.T) {
	f := legacy(t, legacyfixture.Plaintext)
	notReady(f, "old-0")
	notReady(f, "old-2")
	f.EtcdMembers[1].IsLearner = true
	st := f.Statuses["old-1"]
	st.IsLearner = true
	f.Statuses["old-1"] = st
	e := f.PodEnv(t, "old-1")
	if err := runPod(e, defrag.Options{}); err != nil {
		t.Fatalf("a learner: %v\n%s", err, e.Out)
	}

	f = legacy(t, legacyfixture.Plaintext)
	f.Pods["old-1"].Labels[etcdv1alpha2.LabelCluster] = "old"
	f.Extra = append(f.Extra, &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: etcdobservetest.Namespace, Name: "old"}})
	e = f.PodEnv(t, "old-1")
	if err := runPod(e, defrag.Options{}); err != nil {
		t.Fatalf("a settled EtcdCluster: %v\n%s", err, e.Out)
	}
	if !strings.Contains(e.Out.String(), "is not told of this defragmentation") {
		t.Errorf("the plan does not say the operator is not told:\n%s", e.Out)
	}
}

func TestPodRefusesClusterSelectors(t *testing.T) {
	e := legacy(t, legacyfixture.Plaintext).PodEnv(t, "old-1")
	for _, o := range []defrag.Options{{Member: "old-2"}, {Rule: &etcdv1alpha2.DefragRule{All: true}}} {
		if err := runPod(e, o); invocation.Code(err) != invocation.ExitUsage {
			t.Errorf("%+v: want a usage error, got %v", o, err)
		}
	}
	if len(e.Etcd.Calls) != 0 {
		t.Errorf("usage errors called etcd: %v", e.Etcd.Calls)
	}
}

func notReady(f *etcdobservetest.Fixture, pod string) {
	f.Pods[pod].Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
}
