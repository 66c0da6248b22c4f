package membership

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/divergence"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// Timings the planner asks the controller to requeue after (docs/design/timings.md). Watches drive
// most work; these are for external state only (etcd and the Pods' processes).
const (
	// MembershipPoll is how soon to look again while a member's process starts or joins. Only
	// a cluster in the middle of a step polls; one pass costs a MemberList and a Status per
	// member on pooled connections.
	MembershipPoll = 500 * time.Millisecond
	// PromoteRetry is how soon to retry a promotion etcd refused as "learner not in sync". A
	// new learner of an ordinary cluster catches up in well under a second.
	PromoteRetry = time.Second
	// StrictReconfigSettle is etcd's own rule (--strict-reconfig-check, on by default): the
	// leader refuses to add a member until it has been connected for 5 s (etcdserver's
	// HealthInterval) to enough voters to form, with itself, a quorum of the grown cluster.
	// The planner schedules the add for the moment that holds instead of retrying a refused
	// RPC.
	StrictReconfigSettle = 5 * time.Second
	// StartingVoterGrace is how long after its container started a voter that is not yet Ready counts as
	// starting (a refused step waits quietly) rather than unhealthy (the refusal is reported
	// as WaitingForHealthyMembers with a Warning Event).
	StartingVoterGrace = time.Minute
	// ReplacementBackoffBase is the wait before replacing the first member that never started;
	// each further one in a row doubles it, up to ReplacementBackoffMax.
	ReplacementBackoffBase = 5 * time.Minute
	// ReplacementBackoffMax caps the wait between replacements of members that never start.
	ReplacementBackoffMax = time.Hour
	// DefaultOrphanMemberGrace is how long a learner no EtcdMember explains is left alone
	// before it is removed: long enough for a cache to catch up with a member just created.
	DefaultOrphanMemberGrace = time.Minute
)

// Member is one EtcdMember as the planner sees it.
type Member struct {
	// Name is the EtcdMember's name, etcd's --name.
	Name string
	// UID is the EtcdMember's UID.
	UID string
	// Created is the EtcdMember's creationTimestamp.
	Created time.Time
	// PeerURL is the peer URL the member advertises, and is added to etcd with.
	PeerURL string
	// Bootstrap marks the seed.
	Bootstrap bool
	// Pending is true while spec.initialCluster is empty: the member has no Pod and may not be
	// in etcd yet.
	Pending bool
	// Dormant is spec.dormant.
	Dormant bool
	// Deleting is true once the EtcdMember has a deletionTimestamp.
	Deleting bool
	// RemovalReason is the removal-reason annotation: the operator's recorded intent to remove.
	RemovalReason string
	// RemoveFirst is the remove-first annotation.
	RemoveFirst bool
	// Ready is the member's Ready condition.
	Ready bool
	// Unhealthy is true when the member's Healthy condition is False.
	Unhealthy bool
	// NotReadyMessage is the message of the member's Ready condition while it is False: it
	// says what holds the member back (the scheduler's reason, a missing Secret).
	NotReadyMessage string
	// HealthyReason and HealthyMessage are the reason and message of the member's Healthy
	// condition while it is False: the member controller's classification (docs/design/healing.md).
	HealthyReason, HealthyMessage string
	// Updated is true when the member's Updated condition is True (its Pod runs the template
	// it carries).
	Updated bool
	// TemplateCurrent is true when the member's template equals the latched target.
	TemplateCurrent bool
	// TLSMoving is true when the member does not mount the TLS Secrets its cluster's members
	// mount now (a move to managed TLS, docs/tls.md): its template is not current, whatever
	// the latched fields say, and a roll moves it.
	TLSMoving bool
	// WantHash is the template hash of the member under the latched target (image and CA
	// digests included), as the cluster controller computes it; empty when it cannot.
	WantHash string
	// AuthorisedHash is the member's template-hash annotation: the hash the cluster controller
	// authorised its member controller to run.
	AuthorisedHash string
	// PodHash is the template-hash annotation of the member's Pod; empty without a Pod.
	PodHash string
	// ReadyHash is status.readyTemplateHash: the template hash of the last Pod the member was
	// Ready in; empty when none was recorded. It tells a roll's new template from a recreated
	// Pod (docs/design/healing.md, "Damaged data").
	ReadyHash string
	// ReadySince is when the member's Ready condition last turned True; zero unless Ready.
	ReadySince time.Time
	// PodRunning is true when the member's Pod exists and is Running.
	PodRunning bool
	// PodReady is true when the member's Pod is Ready.
	PodReady bool
	// ContainerStarted is when the etcd container's current run started; zero unless running.
	ContainerStarted time.Time
	// RestoreFailure is, for the seed of a cluster that has not formed, why its restore init
	// container last failed ("<reason>: <message>", from its termination message); empty
	// while it has not failed, once it succeeded, and for every other member.
	RestoreFailure string
	// AllowDeletion is the allow-deletion annotation.
	AllowDeletion bool
	// VoterHint is status.isVoter. It is used for conditions only while etcd does not answer,
	// never for a membership decision.
	VoterHint bool
	// MemberID is status.memberID; zero until the member controller recorded it.
	MemberID uint64
	// ReplaceRequested is the replace annotation's value (a person's reason); empty without it.
	ReplaceRequested string
	// ReplaceAnnotated is true when the replace annotation is present, whatever its value.
	ReplaceAnnotated bool
	// Version is status.version: the version the member's etcd last reported. A member that
	// is down right now still runs that version when it comes back, so the version rules read
	// it (docs/design/versions.md).
	Version string
	// Spec is the EtcdMember's spec as read, never modified by the planner; nil when the
	// caller does not need template writes planned (unit tests of single rules). The pass
	// planner reads it to plan the writes that disrupt nothing: the in-place template fields
	// and the recorded storage size.
	Spec *etcdv1alpha2.EtcdMemberSpec
}

// Running reports whether the member counts towards the running members: neither dormant nor
// leaving (a held deletion still runs).
func (m Member) Running() bool { return !m.Dormant && (!m.Deleting || m.Held()) }

// Held reports a deletion nobody in the operator started and no person allowed: the finalizer
// keeps the member, its Pod keeps serving, and it counts as running until a person decides
// (allow-deletion) or the operator removes it for its own reasons.
func (m Member) Held() bool { return m.Deleting && m.RemovalReason == "" && !m.AllowDeletion }

// Leaving reports a member on its way out: the operator recorded why it removes it, or a
// deletion is allowed to proceed.
func (m Member) Leaving() bool {
	return m.RemovalReason != "" || (m.Deleting && !m.Dormant && !m.Held())
}

// PVC is one data PVC of the cluster.
type PVC struct {
	// Name is the PVC's name, data-<member>.
	Name string
	// Member is the member the PVC belongs to (its component label).
	Member string
	// MemberUID is the member-uid annotation.
	MemberUID string
	// Deleting is true once the PVC has a deletionTimestamp.
	Deleting bool
	// MemberRecreated is true when an EtcdMember named Member exists and was created under an
	// explicit name, not GenerateName: re-created for this PVC (or re-applied by a person),
	// never a member the operator made afresh.
	MemberRecreated bool
	// PeerURL is the peer URL an EtcdMember re-created for this PVC would advertise.
	PeerURL string
	// Foreign is true for a PVC that carries the cluster label but holds another cluster's
	// data: controlled by something else, or older than the cluster (left by an earlier cluster
	// of the same name under reclaimPolicy Retain, or adopted from another operator).
	Foreign bool
	// Retained is the cluster ID recorded on a PVC that an earlier cluster of the same name kept
	// (reclaimPolicy Retain): owned by nothing, older than this cluster, with member-uid and
	// cluster-id annotations. Empty for every other PVC. Such a PVC is Foreign until this cluster
	// latches the same cluster ID (adoptRetained), and then re-adopted like any orphan.
	Retained string
	// Claim is the PVC's size, capacity and StorageClass, for storage growth (docs/design/storage.md).
	Claim Claim
}

// Etcd is what etcd said in this pass.
type Etcd struct {
	// Known is true when MemberList answered; everything below is empty otherwise.
	Known bool
	// Members is etcd's member list.
	Members []etcdclient.Member
	// Statuses holds the Status answers of this pass, by member ID. A member without an entry
	// did not answer within its timeout.
	Statuses map[uint64]etcdclient.Status
	// Leader is the leader's member ID; 0 when unknown.
	Leader uint64
	// Alarms are the active alarms.
	Alarms []etcdclient.Alarm
	// FirstSeen is when the operator first saw each member ID; it times orphanMemberGrace.
	FirstSeen map[uint64]time.Time
	// StartedSeen is when the operator first saw each member started; the zero time means it
	// was started before the operator first looked. Unstarted members have no entry.
	StartedSeen map[uint64]time.Time
	// HealthySeen is when the operator last saw each voter count as healthy, in an earlier
	// pass; no entry when it never did.
	HealthySeen map[uint64]time.Time
	// Hash is the latest comparison of the voters' keyspace hashes (docs/design/healing.md,
	// "Keyspace hash comparison"); the zero Result before the first.
	Hash divergence.Result
}

// Scope is everything one pass observed about one cluster.
type Scope struct {
	// Target is status.observed.replicas, the latched member count.
	Target int32
	// ClusterID is status.clusterID; empty before bootstrap latched it.
	ClusterID string
	// Members are the cluster's EtcdMembers, in any order.
	Members []Member
	// PVCs are the cluster's data PVCs.
	PVCs []PVC
	// Etcd is the etcd view.
	Etcd Etcd
	// Now is the clock reading of this pass.
	Now time.Time
	// OrphanMemberGrace overrides DefaultOrphanMemberGrace when positive.
	OrphanMemberGrace time.Duration
	// StrictReconfigSettle and RollSettle override the constants of the same name when
	// positive: tests whose etcd is a fake that does not enforce the 5 s, or whose Pods are
	// Ready the moment they exist, wait less.
	StrictReconfigSettle, RollSettle time.Duration
	// Bootstrapping is true while the cluster has never converged since it was created; it
	// only chooses between the Bootstrapping and ScalingUp reasons.
	Bootstrapping bool
	// Rolling is true while a rolling update this operator process started has not converged:
	// a member it restarted that is not Ready yet is reported as part of the roll, not as a
	// scale-up. It only chooses between the ScalingUp and RollingUpdate reasons.
	Rolling bool
	// TLS is the TLS material spec.tls asks for that is missing.
	TLS TLS
	// Access is what the pass found about the Secrets and credentials etcd is dialled with.
	Access Access
	// Memory is true for a cluster whose members keep their data in memory: a member that
	// lost its Pod lost its data.
	Memory bool
	// Backoff is status.replacementBackoff; zero when none is in force.
	Backoff Backoff
	// StorageSize is the latched spec.storage.size of a PVC cluster; nil for Memory.
	StorageSize *resource.Quantity
	// Observed is status.observed, the latched target; nil before the first adoption. The
	// members' TemplateCurrent and WantHash are computed against it.
	Observed *etcdv1alpha2.ObservedClusterSpec
	// DefragRunning names the cluster's Running EtcdDefrags; every step that writes waits for
	// them (holdForDefrag).
	DefragRunning []string
	// Staging is true when new members' Pods run etcd under the data-dir guard, which holds a
	// staged member's etcd until it is added: new members are then staged before their add
	// (staged.go).
	Staging bool
	// Stranded is what the running members said of themselves while etcd's linearizable member
	// list did not answer (docs/design/quorum-recovery.md); empty otherwise.
	Stranded Stranded
	// Recovery is status.quorumRecovery: a quorum-loss recovery in progress.
	Recovery *etcdv1alpha2.QuorumRecovery
	// Approval is the EtcdCluster's approve-recovery annotation.
	Approval string
	// QuorumLostSince is when the Available condition turned False/QuorumLost; zero otherwise.
	QuorumLostSince time.Time
}

// Backoff spaces out replacements of members that never started (docs/design/healing.md).
type Backoff struct {
	// Attempts counts the consecutive members that never started.
	Attempts int32
	// NotBefore is when the member that failed last may be replaced.
	NotBefore time.Time
}

// orphanGrace returns the grace in force.
func (s *Scope) orphanGrace() time.Duration {
	if s.OrphanMemberGrace > 0 {
		return s.OrphanMemberGrace
	}
	return DefaultOrphanMemberGrace
}

// strictReconfigSettle returns the settle time in force.
func (s *Scope) strictReconfigSettle() time.Duration {
	if s.StrictReconfigSettle > 0 {
		return s.StrictReconfigSettle
	}
	return StrictReconfigSettle
}

// rollSettle returns the settle time in force.
func (s *Scope) rollSettle() time.Duration {
	if s.RollSettle > 0 {
		return s.RollSettle
	}
	return RollSettle
}

// EtcdMemberOf returns the etcd member that is m: same peer URL, or same name once started.
func (s *Scope) EtcdMemberOf(m Member) (etcdclient.Member, bool) {
	for _, e := range s.Etcd.Members {
		if slices.Contains(e.PeerURLs, m.PeerURL) || (e.Name != "" && e.Name == m.Name) {
			return e, true
		}
	}
	return etcdclient.Member{}, false
}

// MemberOf returns the EtcdMember that is etcd member e, by peer URL or name.
func (s *Scope) MemberOf(e etcdclient.Member) (Member, bool) {
	for _, m := range s.Members {
		if slices.Contains(e.PeerURLs, m.PeerURL) || (e.Name != "" && e.Name == m.Name) {
			return m, true
		}
	}
	return Member{}, false
}

// Running returns the running members (neither dormant nor being deleted), sorted by name.
func (s *Scope) Running() []Member {
	var out []Member
	for _, m := range s.Members {
		if m.Running() {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b Member) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Voters returns etcd's voters, sorted by ID.
func (s *Scope) Voters() []etcdclient.Member {
	var out []etcdclient.Member
	for _, e := range s.Etcd.Members {
		if !e.IsLearner {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b etcdclient.Member) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Learners returns etcd's learners, sorted by ID.
func (s *Scope) Learners() []etcdclient.Member {
	var out []etcdclient.Member
	for _, e := range s.Etcd.Members {
		if e.IsLearner {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b etcdclient.Member) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// DisplayName names an etcd member in decisions and messages: its EtcdMember's name, else its
// etcd name, else its hex ID.
func (s *Scope) DisplayName(e etcdclient.Member) string {
	if m, ok := s.MemberOf(e); ok {
		return m.Name
	}
	if e.Name != "" {
		return e.Name
	}
	return e.IDHex()
}

// hasCorruptAlarm reports whether a CORRUPT alarm names id.
func (s *Scope) hasCorruptAlarm(id uint64) bool {
	for _, a := range s.Etcd.Alarms {
		if a.MemberID == id && a.Type == etcdclient.AlarmCorrupt {
			return true
		}
	}
	return false
}

// voterHealth folds this pass's observations of voter e into a quorum.Voter.
func (s *Scope) voterHealth(e etcdclient.Member) quorum.Voter {
	st, answered := s.Etcd.Statuses[e.ID]
	m, hasCR := s.MemberOf(e)
	obs := quorum.Observation{
		StatusAnswered: answered,
		PodReady:       hasCR && (m.PodReady || s.readyButForAlarm(m, answered)),
		CorruptAlarm:   s.hasCorruptAlarm(e.ID) || s.Etcd.Hash.Names(e.ID),
	}
	return quorum.Voter{
		Name:   s.DisplayName(e),
		Health: obs.Health(),
		// Its only Status answer so far was given as a learner: nobody has seen it vote yet.
		JustPromoted: answered && st.IsLearner,
	}
}

// QuorumView projects etcd's membership for the quorum gate.
func (s *Scope) QuorumView() quorum.View {
	var v quorum.View
	for _, e := range s.Voters() {
		v.Voters = append(v.Voters, s.voterHealth(e))
	}
	for _, e := range s.Learners() {
		v.Learners = append(v.Learners, quorum.Learner{Name: s.DisplayName(e), Started: e.Started()})
	}
	return v
}

// IsVoter reports whether member m votes: by etcd's member list when etcd answered, else by
// the member's status (for conditions only).
func (s *Scope) IsVoter(m Member) bool {
	if !s.Etcd.Known {
		return m.VoterHint
	}
	e, ok := s.EtcdMemberOf(m)
	return ok && !e.IsLearner
}

// HealthyVoter reports whether voter e counts as healthy for the gate.
func (s *Scope) HealthyVoter(e etcdclient.Member) bool {
	return s.voterHealth(e).CountsHealthy()
}
