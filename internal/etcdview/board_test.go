package etcdview

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func drain(b *Board) []string {
	var names []string
	for {
		select {
		case e := <-b.Events():
			names = append(names, e.Object.GetNamespace()+"/"+e.Object.GetName())
		default:
			slices.Sort(names)
			return names
		}
	}
}

func TestPublishNotifiesChangedMembersOnly(t *testing.T) {
	t.Parallel()
	b := NewBoard()
	c := types.NamespacedName{Namespace: "ns", Name: "etcd"}
	member := func(n string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: n} }

	b.Publish(c, map[string]View{"a": {}, "b": {Unreachable: true}})
	if got := drain(b); !slices.Equal(got, []string{"ns/b"}) {
		t.Fatalf("first publish notified %v, want ns/b only (a is unchanged from the zero view)", got)
	}
	if !b.View(c, member("b")).Unreachable || b.View(c, member("a")).Unreachable {
		t.Fatal("views not stored")
	}

	b.Publish(c, map[string]View{"a": {}, "b": {Unreachable: true}})
	if got := drain(b); len(got) != 0 {
		t.Fatalf("an unchanged publish notified %v", got)
	}

	b.Publish(c, map[string]View{"a": {Lagging: true}})
	if got := drain(b); !slices.Equal(got, []string{"ns/a", "ns/b"}) {
		t.Fatalf("notified %v, want a (now lagging) and b (no longer in the views)", got)
	}
	if b.View(c, member("b")) != (View{}) || !b.View(c, member("a")).Lagging {
		t.Fatal("views not replaced")
	}
	if b.View(types.NamespacedName{Namespace: "ns", Name: "other"}, member("a")) != (View{}) {
		t.Fatal("another cluster's member saw this cluster's view")
	}
}

// TestRemovedIsRecordedPerClusterAndBounded: a recorded removal is found for its cluster only,
// the oldest records go beyond removedKept, and Forget drops a cluster's records and views.
func TestRemovedIsRecordedPerClusterAndBounded(t *testing.T) {
	t.Parallel()
	b := NewBoard()
	a, other := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	b.RecordRemoved(a, 1)
	b.RecordRemoved(a, 1)
	if !b.Removed(a, 1) || b.Removed(other, 1) || b.Removed(a, 2) {
		t.Fatal("a removal must be found for its cluster and ID only")
	}
	for id := uint64(2); id <= removedKept+1; id++ {
		b.RecordRemoved(a, id)
	}
	if b.Removed(a, 1) || !b.Removed(a, 2) || !b.Removed(a, removedKept+1) {
		t.Errorf("after %d more records: the oldest must go, the newest %d stay", removedKept, removedKept)
	}
	b.Publish(a, map[string]View{"m": {Unreachable: true}})
	b.Forget(a)
	if b.Removed(a, 2) || b.View(a, types.NamespacedName{Namespace: "ns", Name: "m"}) != (View{}) {
		t.Error("Forget must drop the cluster's removals and views")
	}
}
