package alarm_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/alarm"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve/etcdobservetest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/golden"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// legacyNoSpace is a legacy cluster "old" as pod mode sees it, old-1 having raised NOSPACE.
func legacyNoSpace(t *testing.T) *etcdobservetest.Fixture {
	t.Helper()
	s, err := legacyfixture.Build(legacyfixture.Options{Name: "old", Namespace: etcdobservetest.Namespace, Formed: true})
	if err != nil {
		t.Fatal(err)
	}
	f := etcdobservetest.Pods(s.ExpectedPods()...)
	f.Alarms = []etcdclient.Alarm{{MemberID: etcdobservetest.IDB, Type: etcdclient.AlarmNoSpace}}
	return f
}

func TestPodModeList(t *testing.T) {
	for _, format := range []string{invocation.OutputText, invocation.OutputJSON} {
		e := legacyNoSpace(t).PodEnv(t, "old-0")
		e.Deps.Globals.Output = format
		if err := alarm.RunList(context.Background(), alarm.ListOptions{}, e.Deps); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "pod-list."+format, e.Out.Bytes())
	}
}

// One Pod cannot see the other members' database sizes, so disarming NOSPACE needs --force,
// and then goes through that Pod.
func TestPodModeDisarmNoSpace(t *testing.T) {
	e := legacyNoSpace(t).PodEnv(t, "old-0")
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	err := alarm.RunDisarm(context.Background(), alarm.DisarmOptions{Type: etcdclient.AlarmNoSpace}, e.Deps)
	var r *invocation.RefusedError
	if !errors.As(err, &r) || r.Rule != alarm.RuleNoSpaceBelowQuota {
		t.Fatalf("want a refusal by %s, got %v", alarm.RuleNoSpaceBelowQuota, err)
	}
	golden.Check(t, "pod-disarm-refused.text", e.Out.Bytes())

	e = legacyNoSpace(t).PodEnv(t, "old-0")
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	if err := alarm.RunDisarm(context.Background(), alarm.DisarmOptions{Type: etcdclient.AlarmNoSpace, Force: true}, e.Deps); err != nil {
		t.Fatal(err)
	}
	if got, want := etcdobservetest.Mutating(e.Etcd.Calls), []string{"AlarmDisarm a03d5c9e11b2f408 NOSPACE"}; !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
}
