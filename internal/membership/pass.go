package membership

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// PassInput is what PlanPass decides over: the cluster's spec and status as read, and the
// pass's observation projected for the latched target.
type PassInput struct {
	// Spec and Generation are the EtcdCluster's spec and metadata.generation.
	Spec       *etcdv1alpha2.EtcdClusterSpec
	Generation int64
	// Status is the EtcdCluster's status as read. The lock reads observed,
	// observedGeneration and progressDeadline; the version rules read minorSince.
	Status *etcdv1alpha2.EtcdClusterStatus
	// Scope is the observation for status.observed, as read (Scope.Observed).
	Scope Scope
	// ScopeFor projects the same observation for another latched target: the one an
	// adoption latches, whose members' template hashes differ.
	ScopeFor func(*etcdv1alpha2.ObservedClusterSpec) Scope
}

// Plan is everything one pass will do, decided before anything is done
// (docs/design/reconcile-pass.md): the lock's decision, the writes that disrupt nothing, and the
// one membership change or member disruption. The controller carries it out in this order:
// nothing but status when the lock adopted a new target; otherwise MemberStatus, InPlace,
// GrowPVCs and RecordSize, then Action.
type Plan struct {
	// Lock is the locking pattern's decision (docs/design/membership-flows.md). When it adopted
	// a new target, nothing else is planned: the adoption is written before anything acts on
	// it, and Action is only what the next pass is expected to do, for the conditions.
	Lock Lock
	// MemberStatus are the etcd-facing member status fields to write (memberID, isVoter,
	// version), from etcd's member list and Status answers.
	MemberStatus []MemberStatusWrite
	// InPlace names the members whose in-place template fields (additionalMetadata,
	// imagePullSecrets) get the latched ones: neither restarts etcd, so no roll is needed.
	InPlace []string
	// GrowPVCs names the data PVCs whose storage request is raised to Scope.StorageSize
	// (online expansion, docs/design/storage.md).
	GrowPVCs []string
	// RecordSize names the members whose spec.storage.size becomes Scope.StorageSize: their
	// volume reports it.
	RecordSize []string
	// Action is the pass's one step (Next over After).
	Action Action
	// After is the scope as the pass leaves it once its writes have landed: Action was
	// planned over it, and status and conditions are computed from it.
	After Scope

	// projected is After before the etcd-based classification, kept for Replan.
	projected Scope
}

// MemberStatusWrite is the status the EtcdCluster controller owns on one member.
type MemberStatusWrite struct {
	// Member is the EtcdMember's name.
	Member string
	// MemberID is etcd's ID of the member; IsVoter is false for a learner.
	MemberID uint64
	IsVoter  bool
	// Version is the version its etcd last answered with.
	Version string
}

// PlanPass plans one pass: the lock first; on an adoption nothing else; otherwise the writes
// that disrupt nothing, projected onto the scope, and then the one step over that projection,
// exactly as if those writes had been made and read back.
func PlanPass(in PassInput) Plan {
	raw := in.Scope
	st := in.Status
	lock := Decide(LockInput{
		Spec: in.Spec, Generation: in.Generation,
		Observed: st.Observed, ObservedGeneration: st.ObservedGeneration, Deadline: st.ProgressDeadline,
		Converged:       st.Observed != nil && Converged(&raw),
		Now:             raw.Now,
		VersionRejected: VersionRejection(in.Spec.Version, &raw, st.MinorSince),
	})
	if lock.Adopted {
		after := in.ScopeFor(lock.Observed)
		classified := classify(after)
		return Plan{Lock: lock, Action: Next(classified), After: classified, projected: after}
	}
	p := Plan{
		Lock:         lock,
		MemberStatus: memberStatusWrites(&raw),
		InPlace:      inPlaceWrites(&raw),
		GrowPVCs:     PlanStorage(&raw).Grow,
		RecordSize:   sizeRecords(&raw),
	}
	p.projected = raw.afterWrites(&p)
	p.After = classify(p.projected)
	p.Action = Next(p.After)
	if p.Action.VersionRejection != "" && p.Lock.Rejected == "" {
		p.Lock.Rejected = p.Action.VersionRejection
	}
	return p
}

// Replan plans the pass's step again over etcd's member list as re-read right before a
// mutation (two operator replicas may overlap during a leader election, and the pass's list may
// be a few milliseconds old). The mutation goes ahead only if the answer is the same step.
func (p Plan) Replan(members []etcdclient.Member) Action {
	s := p.projected
	s.Etcd.Members = members
	return Next(classify(s))
}

// classify returns a copy of s whose members carry the failures only etcd's view shows
// (ClassifyFromEtcd), leaving s itself as it was.
func classify(s Scope) Scope {
	s.Members = slices.Clone(s.Members)
	s.ClassifyFromEtcd()
	return s
}

// memberStatusWrites are the members whose memberID, isVoter or version differ from what etcd
// says of them; nothing while etcd does not answer. Dormant members keep what they last had.
func memberStatusWrites(s *Scope) []MemberStatusWrite {
	if !s.Etcd.Known {
		return nil
	}
	var out []MemberStatusWrite
	for _, m := range s.Members {
		e, ok := s.EtcdMemberOf(m)
		if !ok || m.Dormant {
			continue
		}
		w := MemberStatusWrite{Member: m.Name, MemberID: e.ID, IsVoter: !e.IsLearner, Version: m.Version}
		if answer, ok := s.Etcd.Statuses[e.ID]; ok && answer.Version != "" {
			w.Version = answer.Version
		}
		if m.MemberID != w.MemberID || m.VoterHint != w.IsVoter || m.Version != w.Version {
			out = append(out, w)
		}
	}
	return out
}

// inPlaceWrites are the members whose in-place template fields differ from the latched ones.
func inPlaceWrites(s *Scope) []string {
	o := s.Observed
	if o == nil {
		return nil
	}
	var out []string
	for _, m := range s.Members {
		if m.Deleting || m.Spec == nil {
			continue
		}
		if !equality.Semantic.DeepEqual(m.Spec.AdditionalMetadata, o.AdditionalMetadata) ||
			!equality.Semantic.DeepEqual(m.Spec.ImagePullSecrets, o.ImagePullSecrets) {
			out = append(out, m.Name)
		}
	}
	return out
}

// sizeRecords are the members whose volume reports the latched size while their template
// still carries a smaller one (docs/design/storage.md: expand first, roll after).
func sizeRecords(s *Scope) []string {
	if s.StorageSize == nil {
		return nil
	}
	size := *s.StorageSize
	var out []string
	for _, m := range s.Members {
		if m.Deleting || m.Spec == nil {
			continue
		}
		c := s.claimOf(m)
		if c == nil || !c.Grown(size) || (m.Spec.Storage.Size != nil && m.Spec.Storage.Size.Cmp(size) >= 0) {
			continue
		}
		out = append(out, m.Name)
	}
	return out
}

// afterWrites projects the plan's writes onto a copy of s: member status fields, in-place
// template fields and recorded sizes on the members (whose TemplateCurrent is judged again), and
// raised requests on the PVCs.
func (s Scope) afterWrites(p *Plan) Scope {
	s.Members = slices.Clone(s.Members)
	s.PVCs = slices.Clone(s.PVCs)
	statuses := map[string]MemberStatusWrite{}
	for _, w := range p.MemberStatus {
		statuses[w.Member] = w
	}
	for i := range s.Members {
		m := &s.Members[i]
		if w, ok := statuses[m.Name]; ok {
			m.MemberID, m.VoterHint, m.Version = w.MemberID, w.IsVoter, w.Version
		}
		inPlace, record := slices.Contains(p.InPlace, m.Name), slices.Contains(p.RecordSize, m.Name)
		if !inPlace && !record {
			continue
		}
		spec := m.Spec.DeepCopy()
		if inPlace {
			spec.AdditionalMetadata = s.Observed.AdditionalMetadata.DeepCopy()
			spec.ImagePullSecrets = slices.Clone(s.Observed.ImagePullSecrets)
		}
		if record {
			spec.Storage.Size = ptrQuantity(s.StorageSize)
		}
		m.Spec = spec
		m.TemplateCurrent = TemplateCurrent(spec, MemberTarget(s.Observed, spec.Storage.Size, s.claimOf(*m))) && !m.TLSMoving
	}
	for i := range s.PVCs {
		if slices.Contains(p.GrowPVCs, s.PVCs[i].Name) {
			s.PVCs[i].Claim.Request = s.StorageSize.DeepCopy()
		}
	}
	return s
}
