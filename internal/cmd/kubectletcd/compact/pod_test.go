package compact_test

import (
	"context"
	"slices"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/compact"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve/etcdobservetest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/golden"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// Through a follower's Pod, the current revision is the one that follower answers with.
func TestPodModeCompactsToThePodsRevision(t *testing.T) {
	s, err := legacyfixture.Build(legacyfixture.Options{Name: "old", Namespace: etcdobservetest.Namespace, Formed: true})
	if err != nil {
		t.Fatal(err)
	}
	f := etcdobservetest.Pods(s.ExpectedPods()...)
	st := f.Statuses["old-2"]
	st.Revision = 5110
	f.Statuses["old-2"] = st
	e := f.PodEnv(t, "old-2")
	if err := compact.Run(context.Background(), compact.Options{}, e.Deps); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "pod-plan.text", e.Out.Bytes())
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	e.Out.Reset()
	if err := compact.Run(context.Background(), compact.Options{}, e.Deps); err != nil {
		t.Fatal(err)
	}
	if got, want := etcdobservetest.Mutating(e.Etcd.Calls), []string{"Compact 5110 physical=false"}; !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
}
