package moveleader_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve/etcdobservetest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/golden"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/moveleader"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// podEnv is a legacy cluster "old" as pod mode sees it through pod; old-0 leads.
func podEnv(t *testing.T, pod string, change func(*etcdobservetest.Fixture)) *invocationtest.Env {
	t.Helper()
	s, err := legacyfixture.Build(legacyfixture.Options{Name: "old", Namespace: etcdobservetest.Namespace, Formed: true})
	if err != nil {
		t.Fatal(err)
	}
	f := etcdobservetest.Pods(s.ExpectedPods()...)
	if change != nil {
		change(f)
	}
	e := f.PodEnv(t, pod)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	return e
}

func runPod(e *invocationtest.Env, to string) error {
	return moveleader.Run(context.Background(), moveleader.Options{To: to}, e.Deps)
}

func TestPodModeMovesFromTheLeadersPod(t *testing.T) {
	e := podEnv(t, "old-0", nil)
	e.Deps.Globals.Apply = false
	if err := runPod(e, "old-2"); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "pod-plan.text", e.Out.Bytes())
	e = podEnv(t, "old-0", nil)
	if err := runPod(e, "old-2"); err != nil {
		t.Fatal(err)
	}
	if got, want := etcdobservetest.Mutating(e.Etcd.Calls), []string{"MoveLeader d4e8f61a97c0b2e5"}; !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
}

func TestPodModeRefusals(t *testing.T) {
	cases := []struct {
		name, pod, to, rule string
		change              func(*etcdobservetest.Fixture)
	}{
		{name: "through a follower's Pod", pod: "old-1", to: "old-2", rule: moveleader.RulePodIsLeader},
		{name: "to a member whose Pod is not Ready", pod: "old-0", to: "old-2", rule: moveleader.RuleQuorum, change: func(f *etcdobservetest.Fixture) {
			f.Pods["old-2"].Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := podEnv(t, tc.pod, tc.change)
			err := runPod(e, tc.to)
			var r *invocation.RefusedError
			if !errors.As(err, &r) || r.Rule != tc.rule {
				t.Fatalf("want a refusal by %s, got %v\n%s", tc.rule, err, e.Out)
			}
			if m := etcdobservetest.Mutating(e.Etcd.Calls); len(m) != 0 {
				t.Errorf("a refused move called %v", m)
			}
		})
	}
	e := podEnv(t, "old-0", nil)
	if err := runPod(e, ""); invocation.Code(err) != invocation.ExitUsage {
		t.Errorf("without --to: want a usage error, got %v", err)
	}
}
