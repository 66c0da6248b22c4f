package retention

import (
	"cmp"
	"slices"
	"time"
)

// Object is one EtcdSnapshot a schedule created, as far as the history limits care.
type Object struct {
	Name string
	// Final is true once the snapshot is Complete or Failed; Succeeded once Complete.
	Final, Succeeded bool
	// Done is when it became final (its creation when it never recorded that).
	Done time.Time
}

// Excess names the final objects beyond the newest succeeded and the newest failed ones the
// limits allow (by Done, then name), sorted; objects not final are never named.
func Excess(objects []Object, succeeded, failed int) []string {
	var ok, bad []Object
	for _, o := range objects {
		switch {
		case !o.Final:
		case o.Succeeded:
			ok = append(ok, o)
		default:
			bad = append(bad, o)
		}
	}
	out := append(beyond(ok, succeeded), beyond(bad, failed)...)
	slices.Sort(out)
	return out
}

func beyond(objects []Object, limit int) []string {
	slices.SortFunc(objects, func(a, b Object) int { return cmp.Or(b.Done.Compare(a.Done), cmp.Compare(b.Name, a.Name)) })
	var out []string
	for i, o := range objects {
		if i >= max(limit, 0) {
			out = append(out, o.Name)
		}
	}
	return out
}
