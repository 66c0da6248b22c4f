package etcdcluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/events"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// versionPass is a pass over members a (etcd answers 3.5.35 this pass), b (etcd lists it but it
// does not answer; its status recorded 3.5.33) and a pending member p, latched at 3.5.35.
func versionPass() *pass {
	rec := &etcdfake.Recorder{Members: []etcdclient.Member{
		{ID: 1, Name: "a", PeerURLs: []string{"http://a.c.ns.svc:2380"}},
		{ID: 2, Name: "b", PeerURLs: []string{"http://b.c.ns.svc:2380"}},
	}}
	a, b, pending := member("a", false), member("b", false), member("p", true)
	a.Status.Version = "3.5.20" // stale: etcd's answer this pass wins
	b.Status.Version = "3.5.33"
	p := testPass(rec, a, b, pending)
	p.r.recorder = events.NewFakeRecorder(10)
	p.view.Statuses = map[uint64]etcdclient.Status{1: {ID: 1, Version: "3.5.35"}}
	p.cluster.Spec.Version = "3.5.35"
	p.cluster.Status.Observed = membership.ObservedFromSpec(&p.cluster.Spec)
	return p
}

func TestRunningVersions(t *testing.T) {
	t.Parallel()
	p := versionPass()
	if diff := cmp.Diff([]string{"3.5.35", "3.5.33"}, p.runningVersions()); diff != "" {
		t.Errorf("runningVersions (-want +got):\n%s", diff)
	}
	// Nothing known: the latched version stands in.
	p.members = nil
	if diff := cmp.Diff([]string{"3.5.35"}, p.runningVersions()); diff != "" {
		t.Errorf("runningVersions without members (-want +got):\n%s", diff)
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
		p := versionPass()
		p.cluster.Spec.Version = c.spec
		if got := p.versionRejection(); got != c.want {
			t.Errorf("versionRejection(%s) = %q, want %q", c.spec, got, c.want)
		}
	}
}

// TestVersionRejectionWaitsForSnapshot: on a cluster that reached 3.6 from 3.5, the step to 3.7
// waits until status.minorSince says every member snapshotted under 3.6 (finding 9).
func TestVersionRejectionWaitsForSnapshot(t *testing.T) {
	t.Parallel()
	p := versionPass()
	p.view.Statuses = map[uint64]etcdclient.Status{1: {ID: 1, Version: "3.6.16"}}
	p.members[1].Status.Version = "3.6.16"
	p.cluster.Status.Observed.Version = "3.6.16"
	p.cluster.Spec.Version = "3.7.3"
	p.cluster.Status.MinorSince = &etcdv1alpha2.MinorSince{Minor: "3.6", RaftIndex: 500}
	const want = "version 3.7.3 must wait until every member has taken a raft snapshot under 3.6, or a member may replay entries 3.5 wrote, which 3.7 cannot read: " +
		"every member must apply raft index 11501, 11001 entries beyond index 500 where every member first ran 3.6; keep 3.6.16 until then (write to the cluster, or lower options.snapshotCount, to get there sooner)"
	if got := p.versionRejection(); got != want {
		t.Errorf("versionRejection before the snapshot:\n got  %q\n want %q", got, want)
	}
	p.cluster.Status.MinorSince.Snapshotted = true
	if got := p.versionRejection(); got != "" {
		t.Errorf("versionRejection after the snapshot = %q, want allowed", got)
	}
	// A record of an older minor says nothing about 3.6: refused, waiting to hear from every member.
	p.cluster.Status.MinorSince = &etcdv1alpha2.MinorSince{Minor: "3.5", Snapshotted: true}
	if got := p.versionRejection(); !strings.Contains(got, "not yet heard from every member running 3.6") {
		t.Errorf("versionRejection with a 3.5 record = %q", got)
	}
}

func TestWakeHeldForVersion(t *testing.T) {
	t.Parallel()
	p := versionPass()
	dormant := member("d", false)
	dormant.Spec.Dormant, dormant.Spec.Version = true, "3.5.35"
	p.cluster.Status.Observed.Version = "3.7.3" // latched without a check (an older operator)
	err := p.holdWakeForVersion(&dormant)
	if !isWaiting(err, healthResync) || p.lock.Rejected == "" {
		t.Fatalf("holdWakeForVersion = %v, lock %+v; want waiting and a refusal", err, p.lock)
	}
	// The same refusal again: no second Warning.
	_ = p.holdWakeForVersion(&dormant)
	rec := p.r.recorder.(*events.FakeRecorder)
	if n := len(rec.Events); n != 1 {
		t.Errorf("%d Events, want 1", n)
	}
	dormant.Status.Version = "3.6.16" // it last ran 3.6: 3.7 may follow
	if err := p.holdWakeForVersion(&dormant); err != nil {
		t.Errorf("holdWakeForVersion after 3.6.16 = %v", err)
	}
}
