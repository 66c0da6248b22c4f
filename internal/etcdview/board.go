// Package etcdview carries what the EtcdCluster controller sees of each member in etcd to the
// EtcdMember controller, which classifies it (docs/design/healing.md: a member whose Pod is Ready
// but whose endpoint does not answer is Healthy=Unknown/Unreachable; a lagging one gets a note),
// and which members it removed from etcd, so that their finalizers go without another MemberList
// (docs/design/member-controller.md, "The finalizer").
// Only the cluster controller talks to every member's endpoint on every pass; the member controller
// reads etcd only to release its finalizer. Keeping the observations in memory, not in the API,
// means no extra writes: after an operator restart they are known again after the cluster
// controller's first pass.
package etcdview

import (
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// View is what the last pass saw of one member.
type View struct {
	// Unreachable: the member's Pod is Ready, but its endpoint did not answer Status.
	Unreachable bool
	// Lagging: the member's applied index is far behind the leader's.
	Lagging bool
	// HashDiffersAt: the keyspace hash comparison found the member's hash different from the
	// majority's at this revision (docs/design/healing.md, "Keyspace hash comparison"); 0 when
	// it did not.
	HashDiffersAt int64
}

// eventBuffer bounds the notifications waiting for the EtcdMember controller. A full buffer
// drops the notification, not the view: the member picks it up at its next pass.
const eventBuffer = 1024

// removedKept bounds how many removed member IDs the Board keeps per cluster: the EtcdMember
// controller looks one up within moments of its removal, and a forgotten one only costs that
// controller a MemberList.
const removedKept = 32

// Board holds the latest View of every member, keyed by the EtcdMember, and notifies the
// EtcdMember controller when one changes; and the etcd member IDs each cluster's controller
// removed from etcd. Safe for concurrent use.
type Board struct {
	mu      sync.Mutex
	views   map[types.NamespacedName]map[string]View // cluster → member name → view
	removed map[types.NamespacedName][]uint64        // cluster → member IDs, oldest first
	events  chan event.GenericEvent
}

// NewBoard returns an empty Board.
func NewBoard() *Board {
	return &Board{views: map[types.NamespacedName]map[string]View{}, removed: map[types.NamespacedName][]uint64{},
		events: make(chan event.GenericEvent, eventBuffer)}
}

// RecordRemoved records that etcd no longer lists member id of cluster: this process's
// MemberRemove of it returned (or found it gone). etcd never reuses a member ID, so the record
// stays true; it is kept in memory only, and a new process asks etcd instead.
func (b *Board) RecordRemoved(cluster types.NamespacedName, id uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ids := b.removed[cluster]
	if slices.Contains(ids, id) {
		return
	}
	ids = append(ids, id)
	if len(ids) > removedKept {
		ids = ids[len(ids)-removedKept:]
	}
	b.removed[cluster] = ids
}

// Removed reports whether RecordRemoved recorded member id of cluster.
func (b *Board) Removed(cluster types.NamespacedName, id uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Contains(b.removed[cluster], id)
}

// Forget drops everything the Board holds of cluster, once it is deleted.
func (b *Board) Forget(cluster types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.views, cluster)
	delete(b.removed, cluster)
}

// Publish replaces the views of cluster's members with views (members absent from it have the
// zero View) and notifies every member whose view changed.
func (b *Board) Publish(cluster types.NamespacedName, views map[string]View) {
	b.mu.Lock()
	before := b.views[cluster]
	next := map[string]View{}
	for name, v := range views {
		if v != (View{}) {
			next[name] = v
		}
	}
	if len(next) == 0 {
		delete(b.views, cluster)
	} else {
		b.views[cluster] = next
	}
	var changed []string
	for name, v := range next {
		if before[name] != v {
			changed = append(changed, name)
		}
	}
	for name := range before {
		if _, ok := next[name]; !ok {
			changed = append(changed, name)
		}
	}
	b.mu.Unlock()
	for _, name := range changed {
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: name}}
		m.SetGroupVersionKind(etcdv1alpha2.GroupVersion.WithKind("EtcdMember"))
		select {
		case b.events <- event.GenericEvent{Object: m}:
		default:
		}
	}
}

// View returns the latest view of member (namespace and name) in cluster.
func (b *Board) View(cluster, member types.NamespacedName) View {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.views[cluster][member.Name]
}

// Events are the notifications of changed views, for a channel source of the EtcdMember
// controller.
func (b *Board) Events() <-chan event.GenericEvent { return b.events }
