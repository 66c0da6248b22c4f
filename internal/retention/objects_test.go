package retention

import (
	"slices"
	"testing"
	"time"
)

func TestExcess(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2025, 1, 6, 0, 0, 0, 0, time.UTC)
	at := func(name string, final, ok bool, minutes int) Object {
		return Object{Name: name, Final: final, Succeeded: ok, Done: t0.Add(time.Duration(minutes) * time.Minute)}
	}
	objects := []Object{
		at("ok1", true, true, 1), at("bad2", true, false, 2), at("ok3", true, true, 3),
		at("run4", false, false, 4), at("bad5", true, false, 5), at("ok6", true, true, 6),
	}
	for _, tc := range []struct {
		succeeded, failed int
		want              []string
	}{
		{7, 3, nil},
		{2, 1, []string{"bad2", "ok1"}},
		{0, 0, []string{"bad2", "bad5", "ok1", "ok3", "ok6"}},
	} {
		if got := Excess(objects, tc.succeeded, tc.failed); !slices.Equal(got, tc.want) {
			t.Errorf("Excess(%d, %d) = %v, want %v", tc.succeeded, tc.failed, got, tc.want)
		}
	}
}
