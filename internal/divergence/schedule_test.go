package divergence_test

import (
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/divergence"
)

func TestDue(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	in := func(mod func(*divergence.Input)) divergence.Input {
		i := divergence.Input{Now: now, Voters: 3, AllAnswered: true}
		if mod != nil {
			mod(&i)
		}
		return i
	}
	alarm := func(i *divergence.Input) { i.Alarm = true }
	for name, tc := range map[string]struct {
		s    divergence.Schedule
		in   divergence.Input
		want bool
	}{
		"first pass of this process":       {divergence.Schedule{}, in(nil), true},
		"within the interval":              {divergence.Schedule{Last: ago(4 * time.Minute)}, in(nil), false},
		"interval passed":                  {divergence.Schedule{Last: ago(divergence.Interval)}, in(nil), true},
		"shorter interval (tests)":         {divergence.Schedule{Last: ago(2 * time.Second)}, in(func(i *divergence.Input) { i.Interval = time.Second }), true},
		"alarm appeared since the last":    {divergence.Schedule{Last: ago(time.Second)}, in(alarm), true},
		"alarm stays, recheck not yet due": {divergence.Schedule{Last: ago(10 * time.Second), UnderAlarm: true}, in(alarm), false},
		"alarm stays, recheck due":         {divergence.Schedule{Last: ago(divergence.AlarmRecheck), UnderAlarm: true}, in(alarm), true},
		"a voter did not answer Status": {divergence.Schedule{}, in(func(i *divergence.Input) {
			i.AllAnswered = false
			i.Alarm = true
		}), false},
		"one voter: nothing to compare with": {divergence.Schedule{}, in(func(i *divergence.Input) { i.Voters = 1 }), false},
		"alarm gone, interval not passed":    {divergence.Schedule{Last: ago(time.Minute), UnderAlarm: true}, in(nil), false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := divergence.Due(tc.s, tc.in); got != tc.want {
				t.Errorf("Due(%+v, %+v) = %t, want %t", tc.s, tc.in, got, tc.want)
			}
		})
	}
}
