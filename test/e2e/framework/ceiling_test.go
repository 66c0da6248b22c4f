package framework

import (
	"strings"
	"testing"
	"time"
)

func TestCountCeilingFor(t *testing.T) {
	t.Parallel()
	c := CountCeiling{Figure: "idle-api-writes", Max: 5, Per: 5 * time.Minute}
	for _, tc := range []struct {
		window time.Duration
		want   int64
	}{
		{window: 5 * time.Minute, want: 5},
		{window: 10 * time.Minute, want: 10},
		{window: 7*time.Minute + 30*time.Second, want: 8}, // 7.5, rounded up
		{window: time.Minute, want: 1},
		{window: 30 * time.Second, want: 1}, // 0.5: a shortened window still allows one
		{window: 2 * time.Second, want: 1},
		{window: 5*time.Minute + time.Millisecond, want: 6}, // scale with the nominal window, not the measured one
		{window: 0, want: 0},
		{window: -time.Second, want: 0},
	} {
		if got := c.For(tc.window); got != tc.want {
			t.Errorf("For(%s) = %d, want %d", tc.window, got, tc.want)
		}
	}
	if got := (CountCeiling{Max: 0, Per: time.Minute}).For(time.Hour); got != 0 {
		t.Errorf("a ceiling of 0 per minute gives %d in an hour, want 0", got)
	}
}

func TestCountCeilingCheck(t *testing.T) {
	t.Parallel()
	c := CountCeiling{Figure: "idle-etcd-conns-new", Max: 5, Per: 5 * time.Minute, Regression: "the pool re-dials"}
	if err := c.Check(5, 5*time.Minute); err != nil {
		t.Errorf("Check(5) in 5m: %v, want nil (at the ceiling)", err)
	}
	if err := c.Check(1, 30*time.Second); err != nil {
		t.Errorf("Check(1) in 30s: %v, want nil", err)
	}
	err := c.Check(2, 30*time.Second)
	if err == nil {
		t.Fatal("Check(2) in 30s = nil, want an error (ceiling 1)")
	}
	for _, want := range []string{"idle-etcd-conns-new = 2", "30s", "ceiling of 1", "5 per 5m0s", "the pool re-dials"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
