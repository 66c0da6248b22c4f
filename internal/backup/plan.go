package backup

import (
	"fmt"
	"time"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// Snapshot Ready reasons (docs/api.md, "EtcdSnapshot status"). The agent's failure reasons
// (ArtifactExists and the others docs/backup-restore.md lists) are reported as they come.
const (
	ReasonJobCreated                 = "JobCreated"
	ReasonJobRunning                 = "JobRunning"
	ReasonSnapshotStored             = "SnapshotStored"
	ReasonOperatorImageNotConfigured = "OperatorImageNotConfigured"
	ReasonClusterNotFound            = "ClusterNotFound"
	ReasonClusterPaused              = "ClusterPaused"
	ReasonWaitingForAuth             = "WaitingForAuth"
	ReasonSecretMissing              = "SecretMissing"
	ReasonAuthLatchTimeout           = "AuthLatchTimeout"
	ReasonSnapshotJobLost            = "SnapshotJobLost"
	ReasonJobFailed                  = "JobFailed"
	// ReasonJobNameTaken: a Job under the snapshot's Job name belongs to something else.
	ReasonJobNameTaken = "JobNameTaken"
)

const (
	// JobPoll is how often a running Job is looked at besides its watch events.
	JobPoll = 10 * time.Second
	// AuthPoll is how often a snapshot waiting for the cluster's auth to latch looks again.
	AuthPoll = 10 * time.Second
	// AuthLatchTimeout is how long a snapshot of a cluster with auth requested waits for
	// status.authEnabled before it fails: the Job could not log in before. A snapshot whose
	// Secrets are missing waits as long for them.
	AuthLatchTimeout = 15 * time.Minute
)

// JobState is what a pass saw of the snapshot's Job.
type JobState int

const (
	// JobAbsent means no Job, confirmed by a read past the cache.
	JobAbsent JobState = iota
	// JobActive means the Job exists and has not finished.
	JobActive
	// JobSucceeded means the Job completed.
	JobSucceeded
	// JobFailed means the Job failed (backoff limit or deadline).
	JobFailed
)

// Outcome is what the agent reported in its termination message; zero when it reported nothing.
type Outcome struct {
	// Artifact is the stored file, when the agent succeeded.
	Artifact *etcdv1alpha2.SnapshotArtifact
	// Pruning is what the schedule's retention did after the artifact was stored.
	Pruning Pruning
	// Reason and Message say why it failed.
	Reason, Message string
}

// Input is one pass's observation of a snapshot.
type Input struct {
	Phase etcdv1alpha2.SnapshotPhase
	// Created is the snapshot's creation; Now the pass's clock.
	Created, Now time.Time
	// ImageSet is false when the operator was not told its own image (no Job can run).
	ImageSet bool
	// ClusterFound, ClusterPaused (spec.replicas 0), AuthRequested (spec.auth.enabled) and
	// AuthLatched (status.authEnabled) describe the cluster.
	ClusterFound, ClusterPaused, AuthRequested, AuthLatched bool
	// Missing names a Secret, or a key of one, that the Job would mount and that does not
	// exist, with the fix; empty when everything is there. A Job started without it would sit
	// in ContainerCreating until its deadline.
	Missing string
	// Job and Outcome describe the Job and what its agent reported.
	Job     JobState
	Outcome Outcome
}

// Decision is the phase, Ready reason and message the pass writes, and what it does.
type Decision struct {
	Phase   etcdv1alpha2.SnapshotPhase
	Reason  string
	Message string
	// CreateJob asks the executor to create the Job (AlreadyExists counts as created).
	CreateJob bool
	// Artifact is set when the snapshot completes, and Pruning then says what the schedule's
	// retention did; the executor announces both.
	Artifact *etcdv1alpha2.SnapshotArtifact
	Pruning  Pruning
	// RequeueAfter is when to look again; zero for never (final phases, or a watch will tell).
	RequeueAfter time.Duration
}

// Final reports whether phase is one a snapshot never leaves.
func Final(phase etcdv1alpha2.SnapshotPhase) bool {
	return phase == etcdv1alpha2.SnapshotPhaseComplete || phase == etcdv1alpha2.SnapshotPhaseFailed
}

// Plan decides one pass. Final phases are sticky: Plan returns an empty Decision for them and
// the caller leaves the status alone.
func Plan(in Input) Decision {
	switch in.Phase {
	case etcdv1alpha2.SnapshotPhaseComplete, etcdv1alpha2.SnapshotPhaseFailed:
		return Decision{Phase: in.Phase}
	case etcdv1alpha2.SnapshotPhaseStarted:
		return planStarted(in)
	}
	return planPending(in)
}

func failed(reason, message string) Decision {
	return Decision{Phase: etcdv1alpha2.SnapshotPhaseFailed, Reason: reason, Message: message}
}

// planPending fails fast on what no retry can fix, waits for auth, and otherwise starts the Job.
func planPending(in Input) Decision {
	switch {
	case !in.ImageSet:
		return failed(ReasonOperatorImageNotConfigured, "the operator does not know its own image, which the snapshot Job runs (it runs outside a Pod): set --data-guard-image to the operator's image, then create the EtcdSnapshot again")
	case !in.ClusterFound:
		return failed(ReasonClusterNotFound, "the EtcdCluster named in spec.clusterRef does not exist in this namespace: create the EtcdSnapshot again naming an existing cluster")
	case in.ClusterPaused:
		return failed(ReasonClusterPaused, "the cluster is paused (spec.replicas 0): no member runs to take the snapshot from; resume it, then create the EtcdSnapshot again")
	case in.AuthRequested && !in.AuthLatched && in.Now.Sub(in.Created) >= AuthLatchTimeout:
		return failed(ReasonAuthLatchTimeout, fmt.Sprintf("the cluster's authentication was not on within %s of the snapshot's creation, so the Job could not log in: see the cluster's conditions, then create the EtcdSnapshot again", AuthLatchTimeout))
	case in.AuthRequested && !in.AuthLatched:
		return Decision{Phase: etcdv1alpha2.SnapshotPhasePending, Reason: ReasonWaitingForAuth, RequeueAfter: AuthPoll,
			Message: "waiting for the cluster to turn its authentication on (status.authEnabled) before the Job logs in as root"}
	case in.Missing != "" && in.Now.Sub(in.Created) >= AuthLatchTimeout:
		return failed(ReasonSecretMissing, fmt.Sprintf("%s, still after %s: create the EtcdSnapshot again once it exists", in.Missing, AuthLatchTimeout))
	case in.Missing != "":
		return Decision{Phase: etcdv1alpha2.SnapshotPhasePending, Reason: ReasonSecretMissing, RequeueAfter: AuthPoll,
			Message: in.Missing + "; the snapshot waits for it"}
	}
	return Decision{Phase: etcdv1alpha2.SnapshotPhaseStarted, Reason: ReasonJobCreated, CreateJob: true, RequeueAfter: JobPoll,
		Message: "created the snapshot Job"}
}

// StoredMessage describes a stored artifact, as the Ready message and the SnapshotStored Event
// show it.
func StoredMessage(a *etcdv1alpha2.SnapshotArtifact) string {
	return fmt.Sprintf("stored %s (%d bytes, %s, revision %d)", a.URI, a.SizeBytes, a.Checksum, a.Revision)
}

// planStarted follows the Job to its end.
func planStarted(in Input) Decision {
	switch in.Job {
	case JobActive:
		return Decision{Phase: etcdv1alpha2.SnapshotPhaseStarted, Reason: ReasonJobRunning, RequeueAfter: JobPoll, Message: "the snapshot Job is running"}
	case JobSucceeded:
		if in.Outcome.Artifact == nil {
			return failed(ReasonJobFailed, "the snapshot Job succeeded but its agent reported no artifact in its termination message: see the Job's Pod")
		}
		msg := StoredMessage(in.Outcome.Artifact)
		if s := in.Outcome.Pruning.Summary(); s != "" {
			msg += "; " + s
		}
		return Decision{Phase: etcdv1alpha2.SnapshotPhaseComplete, Reason: ReasonSnapshotStored, Artifact: in.Outcome.Artifact,
			Pruning: in.Outcome.Pruning, Message: msg}
	case JobFailed:
		if in.Outcome.Reason != "" {
			return failed(in.Outcome.Reason, in.Outcome.Message)
		}
		return failed(ReasonJobFailed, "the snapshot Job failed and its agent reported no reason: see the Job's Pods")
	}
	return failed(ReasonSnapshotJobLost, "the snapshot Job is gone before it finished (deleted?); a snapshot is never re-run: create another EtcdSnapshot")
}
