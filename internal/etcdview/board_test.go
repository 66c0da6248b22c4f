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
