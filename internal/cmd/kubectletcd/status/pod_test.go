package status_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve/etcdobservetest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/status"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// legacyPods is a formed three-member legacy cluster "old" of variant v, as pod mode sees it.
func legacyPods(t *testing.T, v legacyfixture.Variant) *etcdobservetest.Fixture {
	t.Helper()
	s, err := legacyfixture.Build(legacyfixture.Options{Name: "old", Namespace: etcdobservetest.Namespace, Variant: v, Formed: true})
	if err != nil {
		t.Fatal(err)
	}
	return etcdobservetest.Pods(s.ExpectedPods()...)
}

func TestPodMode(t *testing.T) {
	f := legacyPods(t, legacyfixture.TLS)
	delete(f.Pods, "old-2")
	f.Alarms = []etcdclient.Alarm{{MemberID: etcdobservetest.IDA, Type: etcdclient.AlarmNoSpace}}
	for _, format := range []string{invocation.OutputText, invocation.OutputJSON} {
		e := f.PodEnv(t, "old-1")
		e.Deps.Globals.Output = format
		if err := status.RunPod(context.Background(), status.Options{}, e.Deps); err != nil {
			t.Fatal(err)
		}
		golden(t, "pod."+format+".golden", e.Out.String())
		if !slices.Equal(e.Etcd.DialledPods, []string{"old-1"}) {
			t.Errorf("dialled %v, want old-1 alone", e.Etcd.DialledPods)
		}
		for _, c := range e.Etcd.Calls {
			if strings.HasPrefix(c, "Status ") && c != "Status fake://old-1" {
				t.Errorf("pod mode asked another member: %s", c)
			}
		}
	}
}

func TestPodModeWithoutAnAnswer(t *testing.T) {
	f := legacyPods(t, legacyfixture.Plaintext)
	delete(f.Statuses, "old-1")
	e := f.PodEnv(t, "old-1")
	if err := status.RunPod(context.Background(), status.Options{}, e.Deps); err != nil {
		t.Fatal(err)
	}
	golden(t, "pod-no-answer.text.golden", e.Out.String())
}

func TestPodModeRefusesWatchAndMissingPods(t *testing.T) {
	e := legacyPods(t, legacyfixture.Plaintext).PodEnv(t, "old-1")
	if err := status.RunPod(context.Background(), status.Options{Watch: true}, e.Deps); invocation.Code(err) != invocation.ExitUsage {
		t.Errorf("--watch --pod: want a usage error, got %v", err)
	}
	e = legacyPods(t, legacyfixture.Plaintext).PodEnv(t, "old-9")
	err := status.RunPod(context.Background(), status.Options{}, e.Deps)
	if invocation.Code(err) != invocation.ExitUsage || !strings.Contains(err.Error(), "old-9 not found") {
		t.Errorf("a missing Pod: want a usage error naming it, got %v", err)
	}
	if len(e.Etcd.Calls) != 0 {
		t.Errorf("called etcd: %v", e.Etcd.Calls)
	}
}
