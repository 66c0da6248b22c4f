package membership

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// passScope is steady3 as the controller projects it: a latched target, each member's spec
// carrying it, its hash authorised and run by its Pod.
func passScope() (Scope, *etcdv1alpha2.EtcdClusterSpec) {
	spec := &etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To(int32(3)), Version: "3.6.16",
		Storage: etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))}}
	s := steady3()
	s.Observed = ObservedFromSpec(spec)
	s.StorageSize = s.Observed.Storage.Size
	for i := range s.Members {
		m := &s.Members[i]
		m.Spec = &etcdv1alpha2.EtcdMemberSpec{ClusterName: "c", InitialCluster: "x"}
		ApplyTemplate(m.Spec, s.Observed)
		m.WantHash, m.AuthorisedHash, m.PodHash = "h", "h", "h"
		m.MemberID, m.Version = uint64(i+1), "3.6.16"
		s.PVCs[i].Claim = Claim{Request: resource.MustParse("1Gi"), Capacity: resource.MustParse("1Gi"), Bound: true, Class: "x", ClassFound: true, Expandable: true}
	}
	for id, st := range s.Etcd.Statuses {
		st.Version = "3.6.16"
		s.Etcd.Statuses[id] = st
	}
	return s, spec
}

func passInput(s Scope, spec *etcdv1alpha2.EtcdClusterSpec) PassInput {
	return PassInput{
		Spec: spec, Generation: 1,
		Status:   &etcdv1alpha2.EtcdClusterStatus{Observed: s.Observed, ObservedGeneration: 1, ClusterID: s.ClusterID},
		Scope:    s,
		ScopeFor: func(*etcdv1alpha2.ObservedClusterSpec) Scope { panic("no adoption expected") },
	}
}

func TestPlanPassIdleClusterPlansNothing(t *testing.T) {
	t.Parallel()
	s, spec := passScope()
	p := PlanPass(passInput(s, spec))
	if p.Lock.Adopted || len(p.MemberStatus)+len(p.InPlace)+len(p.GrowPVCs)+len(p.RecordSize) != 0 {
		t.Errorf("plan of an idle cluster: %+v", p)
	}
	if p.Action.Kind != KindNone || p.Action.Reason != ReasonReconciled {
		t.Errorf("action = %+v, want Reconciled", p.Action)
	}
}

// TestPlanPassAdoptionPlansNothingElse: an adoption is written before anything acts on it, so
// its pass plans no write; its action, over the new target, is only reported.
func TestPlanPassAdoptionPlansNothingElse(t *testing.T) {
	t.Parallel()
	s, spec := passScope()
	s.Members[0].Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{Labels: map[string]string{"old": "1"}}
	in := passInput(s, spec)
	in.Status.Observed = nil // the first pass: the initial snapshot
	var projected *etcdv1alpha2.ObservedClusterSpec
	in.ScopeFor = func(o *etcdv1alpha2.ObservedClusterSpec) Scope {
		projected = o
		return s
	}
	p := PlanPass(in)
	if !p.Lock.Adopted || p.Lock.AdoptReason != ReasonInitialSnapshot {
		t.Fatalf("lock = %+v, want the initial snapshot", p.Lock)
	}
	if projected == nil || projected.Replicas != 3 {
		t.Errorf("scope projected for %+v, want the adopted target", projected)
	}
	if len(p.MemberStatus)+len(p.InPlace)+len(p.GrowPVCs)+len(p.RecordSize) != 0 {
		t.Errorf("an adopting pass plans writes: %+v", p)
	}
}

// TestPlanPassMemberStatus: memberID, isVoter and version follow etcd; a member that holds them
// already and a dormant member get no write, and the step is planned over the written values.
func TestPlanPassMemberStatus(t *testing.T) {
	t.Parallel()
	s, spec := passScope()
	s.Members[0].MemberID = 0       // never recorded
	s.Members[1].Version = "3.6.15" // etcd answers 3.6.16 now
	s.Members[2].Dormant = true     // keeps what it had
	s.Members[2].VoterHint = false  // (would differ)
	p := PlanPass(passInput(s, spec))
	want := []MemberStatusWrite{{Member: "a", MemberID: 1, IsVoter: true, Version: "3.6.16"}, {Member: "b", MemberID: 2, IsVoter: true, Version: "3.6.16"}}
	if diff := cmp.Diff(want, p.MemberStatus); diff != "" {
		t.Errorf("MemberStatus (-want +got):\n%s", diff)
	}
	if a := p.After.Members[0]; a.MemberID != 1 || !a.VoterHint {
		t.Errorf("After: a = %d, voter %v; want the written values", a.MemberID, a.VoterHint)
	}
	if s.Members[0].MemberID != 0 {
		t.Error("PlanPass changed its input scope")
	}
}

// TestPlanPassInPlaceFieldsNeedNoRoll: a member whose only difference from the target is an
// in-place field is synced in place, and the pass then sees it current: no roll, converged.
func TestPlanPassInPlaceFieldsNeedNoRoll(t *testing.T) {
	t.Parallel()
	s, spec := passScope()
	spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{Labels: map[string]string{"team": "db"}}
	s.Observed = ObservedFromSpec(spec)
	for i := range s.Members {
		s.Members[i].TemplateCurrent = TemplateCurrent(s.Members[i].Spec, s.Observed)
	}
	if s.Members[0].TemplateCurrent {
		t.Fatal("setup: the old metadata should make the template stale")
	}
	p := PlanPass(passInput(s, spec))
	if diff := cmp.Diff([]string{"a", "b", "c"}, p.InPlace); diff != "" {
		t.Errorf("InPlace (-want +got):\n%s", diff)
	}
	for _, m := range p.After.Members {
		if !m.TemplateCurrent || m.Spec.AdditionalMetadata.Labels["team"] != "db" {
			t.Errorf("After: %s current %v, metadata %v", m.Name, m.TemplateCurrent, m.Spec.AdditionalMetadata)
		}
	}
	if p.Action.Kind != KindNone || p.Action.Reason != ReasonReconciled {
		t.Errorf("action = %+v, want Reconciled (nothing to roll)", p.Action)
	}
	if s.Members[0].Spec.AdditionalMetadata != nil {
		t.Error("PlanPass changed its input's member spec")
	}
}

// TestPlanPassStorageGrowth: a bound PVC smaller than the latched size is grown; a member whose
// volume reports the size gets it recorded, and is then judged against it (its hash, from the
// new default quota, is the roll's business).
func TestPlanPassStorageGrowth(t *testing.T) {
	t.Parallel()
	s, spec := passScope()
	two := resource.MustParse("2Gi")
	spec.Storage.Size = &two
	s.Observed = ObservedFromSpec(spec)
	s.StorageSize = s.Observed.Storage.Size
	s.PVCs[1].Claim.Request, s.PVCs[1].Claim.Capacity = two, two // b's volume grew already
	for i := range s.Members {
		m := &s.Members[i]
		m.TemplateCurrent = TemplateCurrent(m.Spec, MemberTarget(s.Observed, m.Spec.Storage.Size, &s.PVCs[i].Claim))
	}
	p := PlanPass(passInput(s, spec))
	if diff := cmp.Diff([]string{"data-a", "data-c"}, p.GrowPVCs); diff != "" {
		t.Errorf("GrowPVCs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b"}, p.RecordSize); diff != "" {
		t.Errorf("RecordSize (-want +got):\n%s", diff)
	}
	if b := p.After.Members[1]; !b.TemplateCurrent || b.Spec.Storage.Size.Cmp(two) != 0 {
		t.Errorf("After: b current %v with size %v", b.TemplateCurrent, b.Spec.Storage.Size)
	}
	if c := p.After.PVCs[0].Claim; c.Request.Cmp(two) != 0 {
		t.Errorf("After: data-a requests %s, want the raised 2Gi", c.Request.String())
	}
	if p.Action.Reason != ReasonExpandingStorage {
		t.Errorf("action = %+v, want ExpandingStorage", p.Action)
	}
}

// TestPlanPassWakeHeldIsARejection: a wake the version rules hold reports the refusal as the
// lock's, like a refused spec.
func TestPlanPassWakeHeldIsARejection(t *testing.T) {
	t.Parallel()
	s, spec := passScope()
	spec.Version = "3.7.3"
	s.Observed = ObservedFromSpec(spec) // latched by an older operator without the check
	d := &s.Members[0]
	d.Dormant, d.Ready, d.PodRunning, d.PodReady, d.Version = true, false, false, false, "3.5.35"
	s.Members, s.Etcd = s.Members[:1], Etcd{}
	s.Target = 3
	in := passInput(s, spec)
	in.Status.ObservedGeneration = 1
	p := PlanPass(in)
	if p.Action.Kind != KindWait || p.Lock.Rejected == "" || p.Lock.Rejected != p.Action.VersionRejection {
		t.Errorf("plan = action %+v, lock %+v; want the held wake's refusal on the lock", p.Action, p.Lock)
	}
}

// TestReplanUsesTheFreshMemberList: the step re-planned right before a mutation sees etcd's
// list as re-read, and nothing else changes.
func TestReplanUsesTheFreshMemberList(t *testing.T) {
	t.Parallel()
	s, spec := passScope()
	s.Members = append(s.Members, with(mem("d", 4), func(m *Member) { m.Pending, m.Ready, m.PodRunning, m.PodReady = true, false, false, false }))
	s.Target = 4
	p := PlanPass(passInput(s, spec))
	if p.Action.Kind != KindJoin || p.Action.InEtcd {
		t.Fatalf("action = %+v, want a Join that adds d", p.Action)
	}
	added := append(append([]etcdclient.Member{}, s.Etcd.Members...), etcdclient.Member{ID: 9, PeerURLs: []string{peer("d")}, IsLearner: true})
	if again := p.Replan(added); again.Kind != KindJoin || !again.InEtcd {
		t.Errorf("Replan = %+v, want the Join that only patches (d is in etcd now)", again)
	}
	if again := p.Replan(s.Etcd.Members); again.Kind != p.Action.Kind || again.InEtcd != p.Action.InEtcd {
		t.Errorf("Replan over the same list = %+v, want %+v", again, p.Action)
	}
}
