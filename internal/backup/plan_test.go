package backup

import (
	"testing"
	"time"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

var t0 = time.Date(2025, 1, 6, 2, 0, 0, 0, time.UTC)

// ready is a new snapshot of a running cluster without auth, by an operator that knows its image.
func ready() Input {
	return Input{Created: t0, Now: t0.Add(time.Second), ImageSet: true, ClusterFound: true}
}

func TestPlan(t *testing.T) {
	t.Parallel()
	artifact := &etcdv1alpha2.SnapshotArtifact{URI: "s3://b/k/s.db", SizeBytes: 42, Checksum: "sha256:ab", Revision: 7}
	with := func(edit func(*Input)) Input { in := ready(); edit(&in); return in }
	started := func(job JobState, o Outcome) Input {
		return with(func(in *Input) { in.Phase, in.Job, in.Outcome = etcdv1alpha2.SnapshotPhaseStarted, job, o })
	}
	cases := []struct {
		name    string
		in      Input
		phase   etcdv1alpha2.SnapshotPhase
		reason  string
		create  bool
		requeue time.Duration
	}{
		{"new and ready: the Job", ready(), etcdv1alpha2.SnapshotPhaseStarted, ReasonJobCreated, true, JobPoll},
		{"no image", with(func(in *Input) { in.ImageSet = false }), etcdv1alpha2.SnapshotPhaseFailed, ReasonOperatorImageNotConfigured, false, 0},
		{"no cluster", with(func(in *Input) { in.ClusterFound = false }), etcdv1alpha2.SnapshotPhaseFailed, ReasonClusterNotFound, false, 0},
		{"paused cluster", with(func(in *Input) { in.ClusterPaused = true }), etcdv1alpha2.SnapshotPhaseFailed, ReasonClusterPaused, false, 0},
		{"auth not latched yet", with(func(in *Input) { in.AuthRequested = true }), etcdv1alpha2.SnapshotPhasePending, ReasonWaitingForAuth, false, AuthPoll},
		{"auth latched", with(func(in *Input) { in.AuthRequested, in.AuthLatched = true, true }), etcdv1alpha2.SnapshotPhaseStarted, ReasonJobCreated, true, JobPoll},
		{"auth never latched", with(func(in *Input) { in.AuthRequested, in.Now = true, t0.Add(AuthLatchTimeout) }), etcdv1alpha2.SnapshotPhaseFailed, ReasonAuthLatchTimeout, false, 0},
		{"Job running", started(JobActive, Outcome{}), etcdv1alpha2.SnapshotPhaseStarted, ReasonJobRunning, false, JobPoll},
		{"Job succeeded", started(JobSucceeded, Outcome{Artifact: artifact}), etcdv1alpha2.SnapshotPhaseComplete, ReasonSnapshotStored, false, 0},
		{"Job succeeded without a report", started(JobSucceeded, Outcome{}), etcdv1alpha2.SnapshotPhaseFailed, ReasonJobFailed, false, 0},
		{"agent refused to overwrite", started(JobFailed, Outcome{Reason: "ArtifactExists", Message: "m"}), etcdv1alpha2.SnapshotPhaseFailed, "ArtifactExists", false, 0},
		{"Job failed silently", started(JobFailed, Outcome{}), etcdv1alpha2.SnapshotPhaseFailed, ReasonJobFailed, false, 0},
		{"Job lost", started(JobAbsent, Outcome{}), etcdv1alpha2.SnapshotPhaseFailed, ReasonSnapshotJobLost, false, 0},
		// Final phases are sticky: a paused cluster or a lost Job later changes nothing.
		{"Complete stays", with(func(in *Input) { in.Phase, in.ClusterPaused = etcdv1alpha2.SnapshotPhaseComplete, true }), etcdv1alpha2.SnapshotPhaseComplete, "", false, 0},
		{"Failed stays", with(func(in *Input) { in.Phase = etcdv1alpha2.SnapshotPhaseFailed }), etcdv1alpha2.SnapshotPhaseFailed, "", false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := Plan(tc.in)
			if d.Phase != tc.phase || d.Reason != tc.reason || d.CreateJob != tc.create || d.RequeueAfter != tc.requeue {
				t.Errorf("Plan = %+v, want phase %s reason %s create %v requeue %s", d, tc.phase, tc.reason, tc.create, tc.requeue)
			}
			if tc.reason != "" && d.Message == "" {
				t.Error("no message")
			}
			if (d.Phase == etcdv1alpha2.SnapshotPhaseComplete && tc.reason != "") != (d.Artifact != nil) {
				t.Errorf("artifact %v on phase %s", d.Artifact, d.Phase)
			}
		})
	}
}
