package compact_test

import (
	"context"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/compact"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve/etcdobservetest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/golden"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
)

func run(e *invocationtest.Env, o compact.Options) error {
	o.Cluster = etcdobservetest.Cluster
	return compact.Run(context.Background(), o, e.Deps)
}

func rev(r int64) *int64 { return &r }

func TestPlanAtTheCurrentRevision(t *testing.T) {
	for _, format := range []string{invocation.OutputText, invocation.OutputJSON} {
		e := etcdobservetest.ThreeMembers().Env(t)
		e.Deps.Globals.Output = format
		if err := run(e, compact.Options{}); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "plan."+format, e.Out.Bytes())
		if m := etcdobservetest.Mutating(e.Etcd.Calls); len(m) != 0 {
			t.Errorf("dry run called %v", m)
		}
	}
}

func TestApplyCompactsToTheLeadersRevision(t *testing.T) {
	f := etcdobservetest.ThreeMembers()
	st := f.Statuses["demo-b"]
	st.Revision = 5130 // ahead of the leader's 5120: a follower never is, but the leader's wins
	f.Statuses["demo-b"] = st
	e := f.Env(t)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	if err := run(e, compact.Options{Physical: true}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(etcdobservetest.Mutating(e.Etcd.Calls), ";"); got != "Compact 5120 physical=true" {
		t.Errorf("calls %q", got)
	}
}

func TestApplyAnOlderRevision(t *testing.T) {
	e := etcdobservetest.ThreeMembers().Env(t)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	if err := run(e, compact.Options{Revision: rev(4000)}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(etcdobservetest.Mutating(e.Etcd.Calls), ";"); got != "Compact 4000 physical=false" {
		t.Errorf("calls %q", got)
	}
}

func TestRevisionOutOfRangeIsRefusedWithExit3(t *testing.T) {
	for _, r := range []int64{0, -5, 5121} {
		e := etcdobservetest.ThreeMembers().Env(t)
		e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
		err := run(e, compact.Options{Revision: rev(r)})
		if invocation.Code(err) != invocation.ExitRefused || !strings.Contains(err.Error(), compact.RuleRevisionRange) {
			t.Fatalf("revision %d: got %v (exit %d), want exit 3 naming %s", r, err, invocation.Code(err), compact.RuleRevisionRange)
		}
		if m := etcdobservetest.Mutating(e.Etcd.Calls); len(m) != 0 {
			t.Errorf("revision %d: a refused compaction called %v", r, m)
		}
	}
}

func TestNoAnswerIsAnError(t *testing.T) {
	f := etcdobservetest.ThreeMembers()
	clear(f.Statuses)
	err := run(f.Env(t), compact.Options{})
	if invocation.Code(err) != invocation.ExitError || !strings.Contains(err.Error(), "current revision is unknown") {
		t.Fatalf("got %v (exit %d)", err, invocation.Code(err))
	}
}

func TestApplyWithoutTerminalOrYesIsRefusedWithExit2(t *testing.T) {
	e := etcdobservetest.ThreeMembers().Env(t)
	e.Deps.Globals.Apply = true
	err := run(e, compact.Options{})
	if invocation.Code(err) != invocation.ExitUsage || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("got %v (exit %d), want exit 2 naming --yes", err, invocation.Code(err))
	}
	if m := etcdobservetest.Mutating(e.Etcd.Calls); len(m) != 0 {
		t.Errorf("an unconfirmed compaction called %v", m)
	}
}
