package alarm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/alarm"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve/etcdobservetest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/golden"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

const removedID uint64 = 0x1234abcd

// alarmed is the fixture with NOSPACE raised by demo-b, CORRUPT naming no member and CORRUPT
// of a member etcd no longer lists.
func alarmed() *etcdobservetest.Fixture {
	f := etcdobservetest.ThreeMembers()
	f.Alarms = []etcdclient.Alarm{
		{MemberID: etcdobservetest.IDB, Type: etcdclient.AlarmNoSpace},
		{MemberID: 0, Type: etcdclient.AlarmCorrupt},
		{MemberID: removedID, Type: etcdclient.AlarmCorrupt},
	}
	return f
}

func list(t *testing.T, e *invocationtest.Env) error {
	t.Helper()
	return alarm.RunList(context.Background(), alarm.ListOptions{Cluster: etcdobservetest.Cluster}, e.Deps)
}

func disarm(e *invocationtest.Env, o alarm.DisarmOptions) error {
	o.Cluster = etcdobservetest.Cluster
	return alarm.RunDisarm(context.Background(), o, e.Deps)
}

func TestListNamesTheMembers(t *testing.T) {
	for _, format := range []string{invocation.OutputText, invocation.OutputJSON} {
		e := alarmed().Env(t)
		e.Deps.Globals.Output = format
		if err := list(t, e); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "list."+format, e.Out.Bytes())
	}
}

func TestListWithoutAlarms(t *testing.T) {
	e := etcdobservetest.ThreeMembers().Env(t)
	if err := list(t, e); err != nil {
		t.Fatal(err)
	}
	if got := e.Out.String(); got != "No active alarm on tenant/demo.\n" {
		t.Errorf("got %q", got)
	}
}

func TestListRefusesNoEtcd(t *testing.T) {
	e := alarmed().Env(t)
	e.Deps.Globals.NoEtcd = true
	if err := list(t, e); invocation.Code(err) != invocation.ExitUsage {
		t.Fatalf("got %v (exit %d), want exit 2", err, invocation.Code(err))
	}
	if len(e.Etcd.Calls) != 0 {
		t.Errorf("--no-etcd called etcd: %v", e.Etcd.Calls)
	}
}

func TestDisarmNoSpacePlan(t *testing.T) {
	for _, format := range []string{invocation.OutputText, invocation.OutputJSON} {
		e := alarmed().Env(t)
		e.Deps.Globals.Output = format
		if err := disarm(e, alarm.DisarmOptions{Type: etcdclient.AlarmNoSpace}); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "disarm-nospace."+format, e.Out.Bytes())
		if m := etcdobservetest.Mutating(e.Etcd.Calls); len(m) != 0 {
			t.Errorf("dry run called %v", m)
		}
		if !strings.Contains(e.ErrOut.String(), "Dry run") {
			t.Errorf("no dry-run notice on stderr: %q", e.ErrOut.String())
		}
	}
}

func TestDisarmNoSpaceApplies(t *testing.T) {
	e := alarmed().Env(t)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	if err := disarm(e, alarm.DisarmOptions{Type: etcdclient.AlarmNoSpace}); err != nil {
		t.Fatal(err)
	}
	want := []string{"AlarmDisarm a03d5c9e11b2f408 NOSPACE"}
	if got := etcdobservetest.Mutating(e.Etcd.Calls); strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("calls %v, want %v", got, want)
	}
}

func TestDisarmCorruptWithoutForceIsRefusedWithExit3(t *testing.T) {
	e := alarmed().Env(t)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	err := disarm(e, alarm.DisarmOptions{Type: etcdclient.AlarmCorrupt})
	if invocation.Code(err) != invocation.ExitRefused || !strings.Contains(err.Error(), alarm.RuleCorruptNeedsForce) ||
		!strings.Contains(err.Error(), "the operator replaces that member") {
		t.Fatalf("got %v (exit %d), want exit 3 naming %s and the operator's healing", err, invocation.Code(err), alarm.RuleCorruptNeedsForce)
	}
	if m := etcdobservetest.Mutating(e.Etcd.Calls); len(m) != 0 {
		t.Errorf("a refused disarm called %v", m)
	}
	golden.Check(t, "disarm-corrupt-refused.text", e.Out.Bytes())
}

func TestDisarmCorruptWithForce(t *testing.T) {
	e := alarmed().Env(t)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	if err := disarm(e, alarm.DisarmOptions{Type: etcdclient.AlarmCorrupt, Force: true}); err != nil {
		t.Fatal(err)
	}
	want := "AlarmDisarm 0 CORRUPT;AlarmDisarm 1234abcd CORRUPT"
	if got := strings.Join(etcdobservetest.Mutating(e.Etcd.Calls), ";"); got != want {
		t.Errorf("calls %s, want %s", got, want)
	}
}

func TestDisarmNoSpaceAtTheQuotaIsRefused(t *testing.T) {
	f := alarmed()
	st := f.Statuses["demo-b"]
	st.DBSize = 2 << 30 // the 4Gi volume's quota
	f.Statuses["demo-b"] = st
	delete(f.Statuses, "demo-c")
	e := f.Env(t)
	err := disarm(e, alarm.DisarmOptions{Type: etcdclient.AlarmNoSpace})
	if invocation.Code(err) != invocation.ExitRefused || !strings.Contains(err.Error(), alarm.RuleNoSpaceBelowQuota) ||
		!strings.Contains(err.Error(), "demo-b (2048.0 MiB), demo-c (no answer)") {
		t.Fatalf("got %v (exit %d), want exit 3 naming %s, demo-b and demo-c", err, invocation.Code(err), alarm.RuleNoSpaceBelowQuota)
	}
	e = f.Env(t)
	if err := disarm(e, alarm.DisarmOptions{Type: etcdclient.AlarmNoSpace, Force: true}); err != nil {
		t.Fatalf("--force: %v", err)
	}
}

func TestDisarmByMember(t *testing.T) {
	e := alarmed().Env(t)
	if err := disarm(e, alarm.DisarmOptions{Member: "demo-b"}); err != nil {
		t.Fatal(err)
	}
	if got := e.Out.String(); !strings.Contains(got, "NOSPACE raised by demo-b") || strings.Contains(got, "CORRUPT") {
		t.Errorf("plan for --member demo-b:\n%s", got)
	}
	err := disarm(alarmed().Env(t), alarm.DisarmOptions{Member: "demo-z"})
	if invocation.Code(err) != invocation.ExitUsage || !strings.Contains(err.Error(), "demo-a, demo-b, demo-c") {
		t.Fatalf("unknown member: got %v, want exit 2 listing the members", err)
	}
}

func TestDisarmNothingMatches(t *testing.T) {
	e := etcdobservetest.ThreeMembers().Env(t)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	if err := disarm(e, alarm.DisarmOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.Out.String(), "nothing to change") || len(etcdobservetest.Mutating(e.Etcd.Calls)) != 0 {
		t.Errorf("plan %q, calls %v", e.Out.String(), e.Etcd.Calls)
	}
}

func TestApplyWithoutTerminalOrYesIsRefusedWithExit2(t *testing.T) {
	e := alarmed().Env(t)
	e.Deps.Globals.Apply = true
	err := disarm(e, alarm.DisarmOptions{Type: etcdclient.AlarmNoSpace})
	if invocation.Code(err) != invocation.ExitUsage || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("got %v (exit %d), want exit 2 naming --yes", err, invocation.Code(err))
	}
	if m := etcdobservetest.Mutating(e.Etcd.Calls); len(m) != 0 {
		t.Errorf("an unconfirmed disarm called %v", m)
	}
}

func TestParseType(t *testing.T) {
	if got, err := alarm.ParseType("nospace"); err != nil || got != etcdclient.AlarmNoSpace {
		t.Errorf("nospace: %q, %v", got, err)
	}
	if _, err := alarm.ParseType("SPACE"); invocation.Code(err) != invocation.ExitUsage {
		t.Errorf("SPACE: %v, want exit 2", err)
	}
}
