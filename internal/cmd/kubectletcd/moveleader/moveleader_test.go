package moveleader_test

import (
	"context"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve/etcdobservetest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/golden"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/moveleader"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

func run(e *invocationtest.Env, to string) error {
	return moveleader.Run(context.Background(), moveleader.Options{Cluster: etcdobservetest.Cluster, To: to}, e.Deps)
}

func applied(t *testing.T, f *etcdobservetest.Fixture, to string) []string {
	t.Helper()
	e := f.Env(t)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	if err := run(e, to); err != nil {
		t.Fatal(err)
	}
	return etcdobservetest.Mutating(e.Etcd.Calls)
}

func refused(t *testing.T, f *etcdobservetest.Fixture, to, rule, why string) {
	t.Helper()
	e := f.Env(t)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	err := run(e, to)
	if invocation.Code(err) != invocation.ExitRefused || !strings.Contains(err.Error(), "rule "+rule) || !strings.Contains(err.Error(), why) {
		t.Fatalf("got %v (exit %d), want exit 3 by rule %s saying %q", err, invocation.Code(err), rule, why)
	}
	if m := etcdobservetest.Mutating(e.Etcd.Calls); len(m) != 0 {
		t.Errorf("a refused move called %v", m)
	}
}

func TestDefaultTargetPlan(t *testing.T) {
	for _, format := range []string{invocation.OutputText, invocation.OutputJSON} {
		e := etcdobservetest.ThreeMembers().Env(t)
		e.Deps.Globals.Output = format
		if err := run(e, ""); err != nil {
			t.Fatal(err)
		}
		// demo-c has applied 8995, demo-b 8990.
		golden.Check(t, "plan."+format, e.Out.Bytes())
		if m := etcdobservetest.Mutating(e.Etcd.Calls); len(m) != 0 {
			t.Errorf("dry run called %v", m)
		}
	}
}

func TestDefaultTargetSkipsFollowersAboutToRoll(t *testing.T) {
	f := etcdobservetest.ThreeMembers()
	f.SetUpdated("demo-c", false)
	want := "MoveLeader " + etcdclient.FormatID(etcdobservetest.IDB)
	if got := strings.Join(applied(t, f, ""), ";"); got != want {
		t.Errorf("calls %q, want %q", got, want)
	}
}

func TestNoFollowerQualifies(t *testing.T) {
	f := etcdobservetest.ThreeMembers()
	f.SetUpdated("demo-c", false)
	f.SetPodReady("demo-b", false)
	refused(t, f, "", moveleader.RuleTargetAvailable, "demo-b has no Ready Pod; demo-c is not Updated")
}

func TestExplicitTarget(t *testing.T) {
	f := etcdobservetest.ThreeMembers()
	want := "MoveLeader " + etcdclient.FormatID(etcdobservetest.IDB)
	if got := strings.Join(applied(t, f, "demo-b"), ";"); got != want {
		t.Errorf("calls %q, want %q", got, want)
	}
}

func TestUnhealthyTargetIsRefusedByTheQuorumGate(t *testing.T) {
	f := etcdobservetest.ThreeMembers()
	f.SetPodReady("demo-b", false)
	refused(t, f, "demo-b", moveleader.RuleQuorum, string(quorum.ReasonNotAHealthyVoter))
}

func TestNoQuorumIsRefusedByTheQuorumGate(t *testing.T) {
	f := etcdobservetest.ThreeMembers()
	f.SetPodReady("demo-b", false)
	delete(f.Statuses, "demo-c")
	refused(t, f, "demo-b", moveleader.RuleQuorum, string(quorum.ReasonNoQuorum))
}

func TestCorruptAlarmDoesNotMakeEveryVoterUnhealthy(t *testing.T) {
	// etcd's readiness probe fails on every member while a CORRUPT alarm is active; the
	// operator then judges voters by their Status answer (docs/design/healing.md).
	f := etcdobservetest.ThreeMembers()
	for _, n := range []string{"demo-a", "demo-b", "demo-c"} {
		f.SetPodReady(n, false)
	}
	f.Alarms = []etcdclient.Alarm{{MemberID: etcdobservetest.IDB, Type: etcdclient.AlarmCorrupt}}
	want := "MoveLeader " + etcdclient.FormatID(etcdobservetest.IDC)
	if got := strings.Join(applied(t, f, ""), ";"); got != want {
		t.Errorf("calls %q, want %q (demo-b is the corrupt one)", got, want)
	}
}

func TestNoLeaderIsRefused(t *testing.T) {
	f := etcdobservetest.ThreeMembers()
	for n, st := range f.Statuses {
		st.Leader = 0
		f.Statuses[n] = st
	}
	refused(t, f, "", moveleader.RuleLeaderKnown, "no member that answered names a leader")
}

func TestTargetAlreadyLeads(t *testing.T) {
	e := etcdobservetest.ThreeMembers().Env(t)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	if err := run(e, "demo-a"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.Out.String(), "demo-a already leads") || len(etcdobservetest.Mutating(e.Etcd.Calls)) != 0 {
		t.Errorf("plan %q, calls %v", e.Out.String(), e.Etcd.Calls)
	}
}

func TestUnknownTargetIsAUsageError(t *testing.T) {
	err := run(etcdobservetest.ThreeMembers().Env(t), "demo-z")
	if invocation.Code(err) != invocation.ExitUsage || !strings.Contains(err.Error(), "demo-a, demo-b, demo-c") {
		t.Fatalf("got %v (exit %d), want exit 2 listing the members", err, invocation.Code(err))
	}
}

func TestApplyWithoutTerminalOrYesIsRefusedWithExit2(t *testing.T) {
	e := etcdobservetest.ThreeMembers().Env(t)
	e.Deps.Globals.Apply = true
	err := run(e, "")
	if invocation.Code(err) != invocation.ExitUsage || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("got %v (exit %d), want exit 2 naming --yes", err, invocation.Code(err))
	}
	if m := etcdobservetest.Mutating(e.Etcd.Calls); len(m) != 0 {
		t.Errorf("an unconfirmed move called %v", m)
	}
}
