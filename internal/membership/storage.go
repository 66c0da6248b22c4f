package membership

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// Storage growth reasons of the Progressing condition (docs/design/storage.md).
const (
	// ReasonExpandingStorage: some member PVCs were asked for the latched size and their
	// volumes have not reported it yet.
	ReasonExpandingStorage = "ExpandingStorage"
	// ReasonStorageExpansionUnsupported: some member PVCs are smaller than the latched size and
	// their StorageClass cannot expand them; only new members get the new size.
	ReasonStorageExpansionUnsupported = "StorageExpansionUnsupported"
)

// Claim is what the storage planner needs of one data PVC: its size request, the capacity its
// volume reports, and whether its StorageClass lets it grow.
type Claim struct {
	// Request is spec.resources.requests.storage.
	Request resource.Quantity
	// Capacity is status.capacity.storage; zero while the claim is not bound.
	Capacity resource.Quantity
	// Bound is status.phase Bound: only a bound claim may have its request raised (the API
	// server refuses the update otherwise), and only a bound claim reports a capacity.
	Bound bool
	// Class is the StorageClass the claim's expansion is judged by: the claim's own
	// storageClassName, else the cluster's spec.storage.storageClassName, else the default
	// class. Empty when there is none.
	Class string
	// ClassFound is true when StorageClass Class exists.
	ClassFound bool
	// ClassUnreadable is true when the operator does not read StorageClasses
	// (--cluster-scoped-reads=false): whether Class exists or can expand is unknown.
	ClassUnreadable bool
	// Expandable is the class's allowVolumeExpansion.
	Expandable bool
	// FileSystemResizePending is the claim's FileSystemResizePending condition: the volume
	// grew, the file system on it waits for the node (for most drivers, a Pod restart).
	FileSystemResizePending bool
}

// Holds reports whether the claim already provides size: it asks for at least size and, once
// bound, its volume reports at least size. An unbound claim that asks for enough gets a volume
// of at least that size when it binds.
func (c *Claim) Holds(size resource.Quantity) bool {
	return c.Request.Cmp(size) >= 0 && (!c.Bound || c.Capacity.Cmp(size) >= 0)
}

// Grown reports whether the claim's volume reports at least size: the moment its expansion is
// done (Event StorageExpanded) and its member's spec.storage.size follows.
func (c *Claim) Grown(size resource.Quantity) bool {
	return c.Bound && c.Request.Cmp(size) >= 0 && c.Capacity.Cmp(size) >= 0
}

// MemberStorageSize is the spec.storage.size a PVC member's template carries under a latched
// size (docs/design/storage.md): the latched size once the member's PVC provides it, or when the member
// has no PVC yet (its PVC is created with the latched size); otherwise the size the member has
// (current), or, for a member created afresh for an existing PVC, what that PVC asks for.
//
// Keeping the old size until the volume grew is what orders growth "expand first, roll after":
// the default quota (min(2 GiB, size/2)) follows the template's size, so a member is restarted
// with the larger quota only once its disk is large enough to hold it. A member whose class
// cannot expand keeps its size, and with it its quota, for good.
func MemberStorageSize(latched, current *resource.Quantity, claim *Claim) *resource.Quantity {
	if latched == nil || claim == nil || claim.Holds(*latched) {
		return latched
	}
	if current != nil {
		return current
	}
	q := claim.Request.DeepCopy()
	if claim.Bound && claim.Capacity.Cmp(q) < 0 {
		q = claim.Capacity.DeepCopy()
	}
	return &q
}

// MemberTarget is the latched target as member m's template is judged against and written
// from: observed, with spec.storage.size as MemberStorageSize says for the member's PVC. It
// returns observed itself when nothing differs (and for Memory members, whose tmpfs size
// changes by replacement, not expansion).
func MemberTarget(observed *etcdv1alpha2.ObservedClusterSpec, current *resource.Quantity, claim *Claim) *etcdv1alpha2.ObservedClusterSpec {
	if observed == nil || observed.Storage.Medium == etcdv1alpha2.StorageMediumMemory {
		return observed
	}
	size := MemberStorageSize(observed.Storage.Size, current, claim)
	if size == observed.Storage.Size {
		return observed
	}
	o := observed.DeepCopy()
	o.Storage.Size = ptrQuantity(size)
	return o
}

func ptrQuantity(q *resource.Quantity) *resource.Quantity {
	if q == nil {
		return nil
	}
	c := q.DeepCopy()
	return &c
}

// StoragePlan is the storage planner's decision for one pass (docs/design/storage.md). Expansion is
// non-disruptive, so it runs beside the pass's one membership step.
type StoragePlan struct {
	// Grow names the PVCs whose request is raised to Size this pass: bound, smaller than Size,
	// in a class that allows expansion.
	Grow []string
	// Expanding describes, sorted, the PVCs whose growth is asked for (or about to be) and not
	// yet reported by their volume; empty when none.
	Expanding []string
	// Unsupported names, sorted, the PVCs smaller than Size that cannot grow: their class is
	// missing or does not allow expansion.
	Unsupported []string
	// UnsupportedClasses names, sorted, the classes of Unsupported, with why.
	UnsupportedClasses []string
}

// PlanStorage decides storage growth for the data PVCs of the running members of s: every PVC
// smaller than s.StorageSize whose class allows expansion gets its request raised (all at once:
// an online expansion disrupts nothing), and the cluster is expanding until each volume reports
// the size. A PVC whose class cannot expand keeps its size; new members get the new one.
func PlanStorage(s *Scope) StoragePlan {
	var p StoragePlan
	if s.Memory || s.StorageSize == nil {
		return p
	}
	size := *s.StorageSize
	classes := map[string]bool{}
	for _, m := range s.Running() {
		c := s.claimOf(m)
		if c == nil || c.Holds(size) {
			continue
		}
		name := pvcName(m.Name)
		switch {
		case !c.ClassFound || !c.Expandable:
			p.Unsupported = append(p.Unsupported, name)
			classes[classProblem(c)] = true
		case c.Request.Cmp(size) < 0 && c.Bound:
			p.Grow = append(p.Grow, name)
			p.Expanding = append(p.Expanding, fmt.Sprintf("%s (requested %s, was %s)", name, size.String(), c.Request.String()))
		case c.Request.Cmp(size) < 0:
			p.Expanding = append(p.Expanding, name+" (grows once it is bound)")
		case c.FileSystemResizePending:
			p.Expanding = append(p.Expanding, fmt.Sprintf("%s (%s of %s; FileSystemResizePending: the file system grows when Pod %s restarts, which the operator does not do yet: delete Pod %s)",
				name, c.Capacity.String(), size.String(), m.Name, m.Name))
		default:
			p.Expanding = append(p.Expanding, fmt.Sprintf("%s (%s of %s)", name, c.Capacity.String(), size.String()))
		}
	}
	p.UnsupportedClasses = slices.Sorted(maps.Keys(classes))
	return p
}

// expanding reports whether the plan still waits for a volume to grow.
func (p StoragePlan) expanding() bool { return len(p.Expanding) > 0 }

// message is the Progressing message of the plan's state.
func (p StoragePlan) message(size resource.Quantity) string {
	if p.expanding() {
		return fmt.Sprintf("expanding PVCs to spec.storage.size %s: %s", size.String(), strings.Join(p.Expanding, ", "))
	}
	return fmt.Sprintf("PVCs %s are smaller than spec.storage.size %s and cannot grow: %s. New members get %s; existing members keep their volumes and quota. "+
		"To grow them, set allowVolumeExpansion: true on the StorageClass if its provisioner supports expansion, "+
		"or replace the members one at a time (annotate each EtcdMember with %s)",
		strings.Join(p.Unsupported, ", "), size.String(), strings.Join(p.UnsupportedClasses, "; "), size.String(), etcdv1alpha2.AnnotationReplace)
}

func classProblem(c *Claim) string {
	switch {
	case c.ClassUnreadable:
		return "the operator does not read StorageClasses (--cluster-scoped-reads=false, the namespace-scoped install), so it cannot tell whether their class allows expansion; " +
			"if it does, raise each PVC's spec.resources.requests.storage to spec.storage.size yourself, and the members follow once the volumes report the size"
	case c.Class == "":
		return "they have no StorageClass (spec.storage.storageClassName is \"\" and no default class exists)"
	case !c.ClassFound:
		return fmt.Sprintf("StorageClass %s does not exist", c.Class)
	}
	return fmt.Sprintf("StorageClass %s does not set allowVolumeExpansion: true", c.Class)
}

// storage is the planner's last rule (docs/design/storage.md): with nothing else to do, a cluster
// whose volumes are still growing is ExpandingStorage, one whose volumes cannot grow is
// StorageExpansionUnsupported. Both are KindNone: the PVC patches are the storage step's, and
// the PVCs' watch brings the next pass.
func storage(s *Scope) (Action, bool) {
	p := PlanStorage(s)
	switch {
	case p.expanding():
		return Action{Kind: KindNone, Reason: ReasonExpandingStorage, Message: p.message(*s.StorageSize)}, true
	case len(p.Unsupported) > 0:
		return Action{Kind: KindNone, Reason: ReasonStorageExpansionUnsupported, Message: p.message(*s.StorageSize)}, true
	}
	return Action{}, false
}

// claimOf returns the storage view of member m's data PVC, or nil without one.
func (s *Scope) claimOf(m Member) *Claim {
	for i := range s.PVCs {
		if p := &s.PVCs[i]; p.Name == pvcName(m.Name) && !p.Deleting {
			return &p.Claim
		}
	}
	return nil
}

// pvcName is the data PVC of member name (desired.PVCName; membership does not import desired).
func pvcName(member string) string { return "data-" + member }
