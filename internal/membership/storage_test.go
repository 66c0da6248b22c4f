package membership

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

var (
	gi1 = resource.MustParse("1Gi")
	gi2 = resource.MustParse("2Gi")
)

// bound is a bound claim of request and capacity in class "fast" (expandable or not).
func bound(request, capacity resource.Quantity, expandable bool) Claim {
	return Claim{Request: request, Capacity: capacity, Bound: true, Class: "fast", ClassFound: true, Expandable: expandable}
}

// grown3 is steady3 with spec.storage.size latched at 2Gi and every PVC given claim.
func grown3(claims ...Claim) Scope {
	s := steady3()
	s.StorageSize = ptr.To(gi2)
	for i := range s.PVCs {
		s.PVCs[i].Claim = claims[i%len(claims)]
	}
	return s
}

func TestPlanStorage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		scope       Scope
		grow        []string
		expanding   int
		unsupported []string
		reason      string // of Next; Reconciled when nothing is left
		message     string // a substring of Next's message
		converged   bool
	}{
		{"every PVC holds the size", grown3(bound(gi2, gi2, false)), nil, 0, nil, ReasonReconciled, "", true},
		{"larger capacity than asked counts", grown3(bound(gi2, resource.MustParse("10Gi"), false)), nil, 0, nil, ReasonReconciled, "", true},
		{"expandable, smaller: every PVC is grown at once", grown3(bound(gi1, gi1, true)),
			[]string{"data-a", "data-b", "data-c"}, 3, nil, ReasonExpandingStorage, "expanding PVCs to spec.storage.size 2Gi: data-a (requested 2Gi, was 1Gi)", false},
		{"expandable, asked, capacity not there yet", grown3(bound(gi2, gi1, true)),
			nil, 3, nil, ReasonExpandingStorage, "data-a (1Gi of 2Gi)", false},
		{"one PVC left to grow", grown3(bound(gi2, gi2, true), bound(gi2, gi2, true), bound(gi2, gi1, true)),
			nil, 1, nil, ReasonExpandingStorage, "data-c (1Gi of 2Gi)", false},
		{"file system resize pending names the Pod to restart", grown3(func() Claim {
			c := bound(gi2, gi1, true)
			c.FileSystemResizePending = true
			return c
		}()), nil, 3, nil, ReasonExpandingStorage, "FileSystemResizePending: the file system grows when Pod a restarts", false},
		{"unbound, smaller: waits to be bound (the API server refuses to resize it)", grown3(Claim{Request: gi1, Class: "fast", ClassFound: true, Expandable: true}),
			nil, 3, nil, ReasonExpandingStorage, "data-a (grows once it is bound)", false},
		{"unbound, asked for the size: holds it", grown3(Claim{Request: gi2, Class: "fast", ClassFound: true}), nil, 0, nil, ReasonReconciled, "", true},
		{"not expandable: unsupported, counts as converged", grown3(bound(gi1, gi1, false)),
			nil, 0, []string{"data-a", "data-b", "data-c"}, ReasonStorageExpansionUnsupported,
			"StorageClass fast does not set allowVolumeExpansion: true. New members get 2Gi", true},
		{"class missing: unsupported", grown3(Claim{Request: gi1, Capacity: gi1, Bound: true, Class: "gone"}),
			nil, 0, []string{"data-a", "data-b", "data-c"}, ReasonStorageExpansionUnsupported, "StorageClass gone does not exist", true},
		{"classes not read (namespace-scoped install): unsupported, grown by hand", grown3(Claim{Request: gi1, Capacity: gi1, Bound: true, Class: "fast", ClassUnreadable: true}),
			nil, 0, []string{"data-a", "data-b", "data-c"}, ReasonStorageExpansionUnsupported,
			"does not read StorageClasses (--cluster-scoped-reads=false, the namespace-scoped install), so it cannot tell whether their class allows expansion; if it does, raise each PVC's", true},
		{"no class at all: unsupported", grown3(Claim{Request: gi1, Capacity: gi1, Bound: true}),
			nil, 0, []string{"data-a", "data-b", "data-c"}, ReasonStorageExpansionUnsupported, "no StorageClass", true},
		{"Memory clusters are not expanded", func() Scope {
			s := grown3(bound(gi1, gi1, true))
			s.Memory = true
			return s
		}(), nil, 0, nil, ReasonReconciled, "", true},
		{"a member without a PVC is not judged", func() Scope {
			s := grown3(bound(gi1, gi1, true))
			s.PVCs = s.PVCs[:1]
			return s
		}(), []string{"data-a"}, 1, nil, ReasonExpandingStorage, "", false},
		{"a rolling update goes first", func() Scope {
			s := grown3(bound(gi1, gi1, true))
			s.Members[1] = with(s.Members[1], func(m *Member) {
				m.TemplateCurrent, m.WantHash, m.AuthorisedHash, m.PodHash = false, "new", "old", "old"
			})
			return s
		}(), []string{"data-a", "data-b", "data-c"}, 3, nil, ReasonRollingUpdate, "restarting b", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.scope
			p := PlanStorage(&s)
			if diff := cmp.Diff(tc.grow, p.Grow); diff != "" {
				t.Errorf("Grow (-want +got):\n%s", diff)
			}
			if len(p.Expanding) != tc.expanding {
				t.Errorf("Expanding = %q, want %d entries", p.Expanding, tc.expanding)
			}
			if diff := cmp.Diff(tc.unsupported, p.Unsupported); diff != "" {
				t.Errorf("Unsupported (-want +got):\n%s", diff)
			}
			a := Next(s)
			if a.Reason != tc.reason || !strings.Contains(a.Message, tc.message) {
				t.Errorf("Next = %s/%s %q, want reason %s with %q", a.Kind, a.Reason, a.Message, tc.reason, tc.message)
			}
			if got := Converged(&s); got != tc.converged {
				t.Errorf("Converged = %v, want %v", got, tc.converged)
			}
		})
	}
}

func TestStorageConditions(t *testing.T) {
	t.Parallel()
	progressingOf := func(s Scope) (string, string) {
		for _, c := range Conditions(ConditionInput{Scope: &s, Action: Next(s)}) {
			if c.Type == etcdv1alpha2.ConditionProgressing {
				return string(c.Status), c.Reason
			}
		}
		return "", ""
	}
	for _, tc := range []struct {
		name           string
		scope          Scope
		status, reason string
	}{
		{"expanding", grown3(bound(gi2, gi1, true)), "True", ReasonExpandingStorage},
		{"unsupported is never Reconciled", grown3(bound(gi1, gi1, false)), "False", ReasonStorageExpansionUnsupported},
		{"grown", grown3(bound(gi2, gi2, true)), "False", ReasonReconciled},
	} {
		st, reason := progressingOf(tc.scope)
		if st != tc.status || reason != tc.reason {
			t.Errorf("%s: Progressing = %s/%s, want %s/%s", tc.name, st, reason, tc.status, tc.reason)
		}
	}
}

func TestMemberStorageSize(t *testing.T) {
	t.Parallel()
	c := func(cl Claim) *Claim { return &cl }
	for _, tc := range []struct {
		name             string
		latched, current *resource.Quantity
		claim            *Claim
		want             *resource.Quantity
	}{
		{"no PVC yet: a new member gets the latched size", ptr.To(gi2), ptr.To(gi1), nil, ptr.To(gi2)},
		{"PVC grown: the latched size", ptr.To(gi2), ptr.To(gi1), c(bound(gi2, gi2, true)), ptr.To(gi2)},
		{"PVC asked, volume not grown: the member keeps its size (and quota)", ptr.To(gi2), ptr.To(gi1), c(bound(gi2, gi1, true)), ptr.To(gi1)},
		{"class cannot expand: the member keeps its size", ptr.To(gi2), ptr.To(gi1), c(bound(gi1, gi1, false)), ptr.To(gi1)},
		{"re-created member of an old PVC: what the volume has", ptr.To(gi2), nil, c(bound(gi2, gi1, true)), ptr.To(gi1)},
		{"re-created member of an unbound PVC: what it asks for", ptr.To(gi2), nil, c(Claim{Request: gi1}), ptr.To(gi1)},
		{"nothing latched", nil, ptr.To(gi1), c(bound(gi1, gi1, true)), nil},
	} {
		got := MemberStorageSize(tc.latched, tc.current, tc.claim)
		if (got == nil) != (tc.want == nil) || (got != nil && got.Cmp(*tc.want) != 0) {
			t.Errorf("%s: MemberStorageSize = %v, want %v", tc.name, got, tc.want)
		}
	}

	observed := &etcdv1alpha2.ObservedClusterSpec{Storage: etcdv1alpha2.StorageSpec{Size: ptr.To(gi2)}}
	if got := MemberTarget(observed, ptr.To(gi1), c(bound(gi2, gi2, true))); got != observed {
		t.Errorf("MemberTarget of a grown PVC copied observed")
	}
	got := MemberTarget(observed, ptr.To(gi1), c(bound(gi1, gi1, false)))
	if got.Storage.Size.Cmp(gi1) != 0 || observed.Storage.Size.Cmp(gi2) != 0 {
		t.Errorf("MemberTarget = size %v (observed %v), want 1Gi and observed untouched", got.Storage.Size, observed.Storage.Size)
	}
	mem := observed.DeepCopy()
	mem.Storage.Medium = etcdv1alpha2.StorageMediumMemory
	if got := MemberTarget(mem, ptr.To(gi1), nil); got != mem {
		t.Errorf("MemberTarget of a Memory cluster changed the target")
	}
}
