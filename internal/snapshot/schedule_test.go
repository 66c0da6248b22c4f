package snapshot

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/etcd-operator/etcd-operator/internal/agentenv"
)

func TestParseConfigSchedule(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig(lookupIn(pvcEnv()))
	if err != nil || cfg.Schedule != nil {
		t.Fatalf("a one-off snapshot: schedule %+v, %v; want none", cfg.Schedule, err)
	}
	env := pvcEnv()
	env[EnvScheduleName], env[EnvScheduleUID] = "nightly", "uid-schedule"
	cfg, err = ParseConfig(lookupIn(env))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&ScheduleConfig{Name: "nightly", UID: "uid-schedule"}, cfg.Schedule); diff != "" {
		t.Errorf("schedule without retention (-want +got):\n%s", diff)
	}
	env[EnvRetentionKeepLast], env[EnvRetentionKeepWeekly], env[EnvRetentionTimeZone] = "3", " 4 ", "Europe/Berlin"
	cfg, err = ParseConfig(lookupIn(env))
	if err != nil {
		t.Fatal(err)
	}
	want := &ScheduleConfig{Name: "nightly", UID: "uid-schedule", Retention: &RetentionConfig{KeepLast: 3, KeepWeekly: 4, TimeZone: "Europe/Berlin"}}
	if diff := cmp.Diff(want, cfg.Schedule); diff != "" {
		t.Errorf("schedule with retention (-want +got):\n%s", diff)
	}
}

// TestParseConfigRefusesAHalfSchedule: a retention needs the schedule it prunes for, and the
// schedule both its name and its UID; counts are positive integers.
func TestParseConfigRefusesAHalfSchedule(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"name without UID", map[string]string{EnvScheduleName: "nightly"}, []string{EnvScheduleName}},
		{"UID without name", map[string]string{EnvScheduleUID: "u"}, []string{EnvScheduleName}},
		{"retention without schedule", map[string]string{EnvRetentionKeepLast: "3"}, []string{EnvScheduleName}},
		{"bad name", map[string]string{EnvScheduleName: "Nightly*", EnvScheduleUID: "u"}, []string{EnvScheduleName}},
		{"bad counts", map[string]string{EnvScheduleName: "n", EnvScheduleUID: "u", EnvRetentionKeepLast: "0", EnvRetentionKeepDaily: "x"},
			[]string{EnvRetentionKeepDaily, EnvRetentionKeepLast}},
		{"zone without a rule", map[string]string{EnvScheduleName: "n", EnvScheduleUID: "u", EnvRetentionTimeZone: "UTC"}, []string{EnvRetentionKeepLast}},
	}
	for _, c := range cases {
		env := pvcEnv()
		for k, v := range c.env {
			env[k] = v
		}
		_, err := ParseConfig(lookupIn(env))
		var named []string
		var f *Failure
		if errors.As(err, &f) {
			for _, e := range f.Err.(agentenv.Problems) { //nolint:errorlint // the concrete list is what is tested
				if ce, ok := errors.AsType[*agentenv.ConfigError](e); ok {
					named = append(named, ce.Var)
				}
			}
		}
		slices.Sort(named)
		if ReasonOf(err) != ReasonInvalidConfig || !slices.Equal(named, c.want) {
			t.Errorf("%s: %v naming %v, want InvalidConfig naming %v", c.name, err, named, c.want)
		}
	}
}
