package status

import (
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/printer"
	"github.com/etcd-operator/etcd-operator/internal/etcdaccess"
)

// Kind is the report's kind in JSON and YAML.
const Kind = "Status"

// SnapshotsShown is how many of the newest EtcdSnapshots the report lists.
const SnapshotsShown = 3

// Member roles.
const (
	RoleLeader   = "leader"
	RoleFollower = "follower"
	RoleLearner  = "learner"
	// RoleVoter is a voter whose leadership is unknown: etcd knows no leader, or only the
	// EtcdMember's status.isVoter was read.
	RoleVoter = "voter"
)

// Report is one cluster's status: what the custom resources say, joined with what etcd answered
// (docs/kubectl-etcd.md, "status").
type Report struct {
	Schema     string      `json:"schema"`
	Kind       string      `json:"kind"`
	Cluster    Cluster     `json:"cluster"`
	Conditions []Condition `json:"conditions"`
	// ObservedGeneration is the generation the operator has latched; Generation the newest.
	ObservedGeneration int64 `json:"observedGeneration"`
	Generation         int64 `json:"generation"`
	// ProgressDeadline is when the current target's deadline expires; absent once converged.
	ProgressDeadline *metav1.Time `json:"progressDeadline,omitempty"`
	// PDB is null when the cluster has none (one voter, or paused).
	PDB *PDB `json:"pdb"`
	// Alarms is null when etcd's alarms are unknown, and empty when there are none.
	Alarms []Alarm `json:"alarms"`
	// Members are the EtcdMembers by name, then etcd members no EtcdMember is, by ID.
	Members []Member `json:"members"`
	// Snapshots are the newest EtcdSnapshots of the cluster, newest first.
	Snapshots []Snapshot `json:"snapshots"`
	// Etcd says whether etcd was reached and which cluster-wide calls failed.
	Etcd etcdread.Source `json:"etcd"`

	// now is when the report was built, for the ages in the text form.
	now time.Time
}

// Cluster is the EtcdCluster's target and counts.
type Cluster struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Version is spec.version, the target; RunningVersion the lowest version members run.
	Version        string `json:"version"`
	RunningVersion string `json:"runningVersion,omitempty"`
	Replicas       int32  `json:"replicas"`
	ReadyMembers   int32  `json:"readyMembers"`
	UpdatedMembers int32  `json:"updatedMembers"`
	ClusterID      string `json:"clusterID,omitempty"`
	// Auth is on, off, or enabling (asked for in the spec, not on in etcd yet).
	Auth string `json:"auth"`
	TLS  TLS    `json:"tls"`
}

// TLS is each API's mode: plaintext, TLS or mTLS; the peer API may also be auto-TLS (clusters
// adopted from the legacy operator).
type TLS struct {
	Client string `json:"client"`
	Peer   string `json:"peer"`
}

// Condition is one EtcdCluster condition.
type Condition struct {
	Type               string                 `json:"type"`
	Status             metav1.ConditionStatus `json:"status"`
	Reason             string                 `json:"reason"`
	Message            string                 `json:"message,omitempty"`
	LastTransitionTime metav1.Time            `json:"lastTransitionTime"`
}

// PDB is the cluster's PodDisruptionBudget.
type PDB struct {
	Name               string `json:"name"`
	MinAvailable       string `json:"minAvailable,omitempty"`
	MaxUnavailable     string `json:"maxUnavailable,omitempty"`
	AllowedDisruptions int32  `json:"allowedDisruptions"`
	CurrentHealthy     int32  `json:"currentHealthy"`
	DesiredHealthy     int32  `json:"desiredHealthy"`
}

// Alarm is one active etcd alarm.
type Alarm struct {
	Type     string `json:"type"`
	MemberID string `json:"memberID"`
	// Member is the EtcdMember (or etcd name) of MemberID, when known.
	Member string `json:"member,omitempty"`
}

// Member is one row of the members table. Fields only etcd knows are absent when it did not
// answer for the member.
type Member struct {
	// Name is the EtcdMember's name; empty for an etcd member no EtcdMember is.
	Name string `json:"name,omitempty"`
	// EtcdName is etcd's name for a member no EtcdMember is.
	EtcdName string `json:"etcdName,omitempty"`
	ID       string `json:"id,omitempty"`
	Role     string `json:"role,omitempty"`
	Version  string `json:"version,omitempty"`
	// DBSizeBytes is the database file; DBSizeInUseBytes its live part (the rest is freed by
	// a defragmentation).
	DBSizeBytes      *int64 `json:"dbSizeBytes,omitempty"`
	DBSizeInUseBytes *int64 `json:"dbSizeInUseBytes,omitempty"`
	// RaftAppliedIndex is the member's applied index; AppliedIndexLag how far it is behind the
	// highest applied index of the members that answered.
	RaftAppliedIndex *uint64 `json:"raftAppliedIndex,omitempty"`
	AppliedIndexLag  *uint64 `json:"appliedIndexLag,omitempty"`
	// Ready, Updated and Healthy are the EtcdMember's conditions.
	Ready   *MemberCondition `json:"ready,omitempty"`
	Updated *MemberCondition `json:"updated,omitempty"`
	Healthy *MemberCondition `json:"healthy,omitempty"`
	Pod     string           `json:"pod,omitempty"`
	Node    string           `json:"node,omitempty"`
	// StatusError is the kind of failure of the member's Status call (timeout, unavailable...).
	StatusError string `json:"statusError,omitempty"`
	// Orphan is NoEtcdMember or NotInEtcd (docs/kubectl-etcd.md, "members").
	Orphan string `json:"orphan,omitempty"`
}

// MemberCondition is one EtcdMember condition.
type MemberCondition struct {
	Status metav1.ConditionStatus `json:"status"`
	Reason string                 `json:"reason"`
}

// Snapshot is one EtcdSnapshot.
type Snapshot struct {
	Name        string       `json:"name"`
	Phase       string       `json:"phase"`
	CreatedAt   metav1.Time  `json:"createdAt"`
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	SizeBytes   int64        `json:"sizeBytes,omitempty"`
	// Checksum is "sha256:<hex>".
	Checksum string `json:"checksum,omitempty"`
	Revision int64  `json:"revision,omitempty"`
}

// Build makes the report of s and what etcd answered in v, at now.
func Build(s *clusterread.State, v *etcdread.View, now time.Time) Report {
	c := s.Cluster
	r := Report{
		Schema:             printer.Schema,
		Kind:               Kind,
		Cluster:            cluster(c),
		Conditions:         conditions(c),
		ObservedGeneration: c.Status.ObservedGeneration,
		Generation:         c.Generation,
		ProgressDeadline:   c.Status.ProgressDeadline,
		PDB:                pdb(s.PDB),
		Members:            members(s, v),
		Snapshots:          snapshots(s.Snapshots),
		Etcd:               v.Source(),
		now:                now,
	}
	r.Alarms = alarms(v, r.Members)
	return r
}

func cluster(c *etcdv1alpha2.EtcdCluster) Cluster {
	auth := "off"
	switch {
	case c.Status.AuthEnabled:
		auth = "on"
	case c.Spec.Auth != nil && c.Spec.Auth.Enabled:
		auth = "enabling"
	}
	return Cluster{
		Namespace:      c.Namespace,
		Name:           c.Name,
		Version:        c.Spec.Version,
		RunningVersion: c.Status.RunningVersion,
		Replicas:       clusterread.Replicas(c),
		ReadyMembers:   c.Status.ReadyMembers,
		UpdatedMembers: c.Status.UpdatedMembers,
		ClusterID:      c.Status.ClusterID,
		Auth:           auth,
		TLS:            tlsModes(c),
	}
}

// tlsModes reads the modes from the spec only (docs/tls.md): no Secret is read, so a
// read-only Role without Secret access sees them.
func tlsModes(c *etcdv1alpha2.EtcdCluster) TLS {
	t := TLS{Client: "plaintext", Peer: "plaintext"}
	if etcdaccess.ClientTLS(c) {
		t.Client = "TLS"
		if etcdaccess.OperatorClientSecretName(c) != "" {
			t.Client = "mTLS"
		}
	}
	switch {
	case c.Spec.TLS != nil && (c.Spec.TLS.Peer != nil || c.Spec.TLS.Managed != nil):
		t.Peer = "mTLS"
	case c.Annotations[etcdv1alpha2.AnnotationPeerAutoTLS] == "true":
		t.Peer = "auto-TLS"
	}
	return t
}

// conditions are Available, Progressing and Degraded in that order, those the cluster has.
func conditions(c *etcdv1alpha2.EtcdCluster) []Condition {
	out := []Condition{}
	for _, t := range []string{etcdv1alpha2.ConditionAvailable, etcdv1alpha2.ConditionProgressing, etcdv1alpha2.ConditionDegraded} {
		if cond, ok := clusterread.Condition(c, t); ok {
			out = append(out, Condition{Type: t, Status: cond.Status, Reason: cond.Reason, Message: cond.Message, LastTransitionTime: cond.LastTransitionTime})
		}
	}
	return out
}

func pdb(p *policyv1.PodDisruptionBudget) *PDB {
	if p == nil {
		return nil
	}
	out := &PDB{Name: p.Name, AllowedDisruptions: p.Status.DisruptionsAllowed, CurrentHealthy: p.Status.CurrentHealthy, DesiredHealthy: p.Status.DesiredHealthy}
	if p.Spec.MinAvailable != nil {
		out.MinAvailable = p.Spec.MinAvailable.String()
	}
	if p.Spec.MaxUnavailable != nil {
		out.MaxUnavailable = p.Spec.MaxUnavailable.String()
	}
	return out
}

func snapshots(list []etcdv1alpha2.EtcdSnapshot) []Snapshot {
	out := []Snapshot{}
	for _, s := range list[:min(len(list), SnapshotsShown)] {
		phase := string(s.Status.Phase)
		if phase == "" {
			phase = string(etcdv1alpha2.SnapshotPhasePending)
		}
		snap := Snapshot{Name: s.Name, Phase: phase, CreatedAt: s.CreationTimestamp, CompletedAt: s.Status.CompletedAt}
		if a := s.Status.Artifact; a != nil {
			snap.SizeBytes, snap.Checksum, snap.Revision = a.SizeBytes, a.Checksum, a.Revision
		}
		out = append(out, snap)
	}
	return out
}

// alarms are nil when etcd's alarms are unknown.
func alarms(v *etcdread.View, members []Member) []Alarm {
	if !v.Reached() || v.AlarmsErr != nil {
		return nil
	}
	out := []Alarm{}
	for _, a := range v.Alarms {
		al := Alarm{Type: string(a.Type), MemberID: formatID(a.MemberID)}
		for _, m := range members {
			if m.ID == al.MemberID {
				al.Member = m.Name
				if al.Member == "" {
					al.Member = m.EtcdName
				}
			}
		}
		out = append(out, al)
	}
	return out
}
