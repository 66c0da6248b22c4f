package membership

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// versionScope is a scope over members a (etcd answers 3.5.35 this pass), b (etcd lists it but
// it does not answer; its status recorded 3.5.33) and a pending member p, latched at 3.5.35.
func versionScope() Scope {
	s := steady3()
	s.Members = []Member{
		with(mem("a", 1), func(m *Member) { m.Version = "3.5.20" }), // stale: etcd's answer this pass wins
		with(mem("b", 2), func(m *Member) { m.Version = "3.5.33" }),
		with(mem("p", 3), func(m *Member) { m.Pending = true }),
	}
	s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"))
	s.Etcd.Statuses = map[uint64]etcdclient.Status{1: {ID: 1, Version: "3.5.35"}}
	s.Observed = &etcdv1alpha2.ObservedClusterSpec{Replicas: 3, Version: "3.5.35"}
	return s
}

func TestRunningVersions(t *testing.T) {
	t.Parallel()
	s := versionScope()
	if diff := cmp.Diff([]string{"3.5.35", "3.5.33"}, RunningVersions(&s)); diff != "" {
		t.Errorf("RunningVersions (-want +got):\n%s", diff)
	}
	// Nothing known: the latched version stands in.
	s.Members = nil
	if diff := cmp.Diff([]string{"3.5.35"}, RunningVersions(&s)); diff != "" {
		t.Errorf("RunningVersions without members (-want +got):\n%s", diff)
	}
}

func TestVersionRejection(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec, want string
	}{
		{"3.5.35", ""}, // the latched version: not checked again
		{"3.5.1", ""},  // patch down
		{"3.6.16", ""}, // every member at 3.5.32 or later
		{"3.7.3", "version 3.7.3 skips a minor: the members run 3.5.33 and 3.5.35; upgrade to 3.6.x (the newest supported 3.6 is 3.6.16) first"},
	} {
		s := versionScope()
		if got := VersionRejection(c.spec, &s, nil); got != c.want {
			t.Errorf("VersionRejection(%s) = %q, want %q", c.spec, got, c.want)
		}
	}
}

// TestVersionRejectionWaitsForSnapshot: on a cluster that reached 3.6 from 3.5, the step to 3.7
// waits until status.minorSince says every member snapshotted under 3.6 (finding 9 in
// docs/e2e-lifecycle.md).
func TestVersionRejectionWaitsForSnapshot(t *testing.T) {
	t.Parallel()
	s := versionScope()
	s.Etcd.Statuses = map[uint64]etcdclient.Status{1: {ID: 1, Version: "3.6.16"}}
	s.Members[1].Version = "3.6.16"
	s.Observed.Version = "3.6.16"
	ms := &etcdv1alpha2.MinorSince{Minor: "3.6", RaftIndex: 500}
	const want = "version 3.7.3 must wait until every member has taken a raft snapshot under 3.6, or a member may replay entries 3.5 wrote, which 3.7 cannot read: " +
		"every member must apply raft index 11501, 11001 entries beyond index 500 where every member first ran 3.6; keep 3.6.16 until then (write to the cluster, or lower options.snapshotCount, to get there sooner)"
	if got := VersionRejection("3.7.3", &s, ms); got != want {
		t.Errorf("VersionRejection before the snapshot:\n got  %q\n want %q", got, want)
	}
	ms.Snapshotted = true
	if got := VersionRejection("3.7.3", &s, ms); got != "" {
		t.Errorf("VersionRejection after the snapshot = %q, want allowed", got)
	}
	// A record of an older minor says nothing about 3.6: refused, waiting to hear from every member.
	if got := VersionRejection("3.7.3", &s, &etcdv1alpha2.MinorSince{Minor: "3.5", Snapshotted: true}); !strings.Contains(got, "not yet heard from every member running 3.6") {
		t.Errorf("VersionRejection with a 3.5 record = %q", got)
	}
}

// TestWakeHeldForVersion: a dormant member wakes only when the latched version may follow the
// version its data was last written by; the hold is a wait that carries the refusal.
func TestWakeHeldForVersion(t *testing.T) {
	t.Parallel()
	dormant := with(mem("d", 1), func(m *Member) {
		m.Dormant, m.Ready, m.PodRunning, m.PodReady = true, false, false, false
		m.Spec = &etcdv1alpha2.EtcdMemberSpec{Version: "3.5.35", Dormant: true}
	})
	s := Scope{Target: 3, ClusterID: "cid", Now: t0, Members: []Member{dormant},
		Observed: &etcdv1alpha2.ObservedClusterSpec{Replicas: 3, Version: "3.7.3"}} // latched without a check (an older operator)
	a := Next(s)
	if a.Kind != KindWait || a.Member != "d" || a.Reason != ReasonResuming || a.RequeueAfter != VersionRecheck || !strings.Contains(a.VersionRejection, "3.7.3") {
		t.Fatalf("Next = %+v, want a wake of d held by the version rules", a)
	}
	s.Members[0].Version = "3.6.16" // it last ran 3.6: 3.7 may follow
	if a := Next(s); a.Kind != KindWake || a.VersionRejection != "" {
		t.Errorf("Next after 3.6.16 = %+v, want the wake", a)
	}
}

func TestLowestRunning(t *testing.T) {
	t.Parallel()
	s := Scope{Target: 3, Etcd: Etcd{Statuses: map[uint64]etcdclient.Status{
		1: {Version: "3.6.5"}, 2: {Version: "3.5.21"}, 3: {Version: "3.6.16"},
	}}}
	if got := LowestRunning(&s); got != "3.5.21" {
		t.Errorf("LowestRunning = %q, want the lowest", got)
	}
	paused := Scope{Target: 0, Members: []Member{{Name: "d", Dormant: true, Version: "3.6.4"}}}
	if got := LowestRunning(&paused); got != "3.6.4" {
		t.Errorf("paused LowestRunning = %q, want the dormant member's last version", got)
	}
	if got := LowestRunning(&Scope{Target: 3, Members: paused.Members}); got != "" {
		t.Errorf("LowestRunning with no answer = %q, want empty (status keeps the last)", got)
	}
}
