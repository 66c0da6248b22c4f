package phase

import (
	"slices"
	"testing"
)

func TestHealthErrorsLeaveListedAlarmsToAlarmsActive(t *testing.T) {
	t.Parallel()
	errs := []string{"memberID:466407478866905961 alarm:NOSPACE ", "etcdserver: no leader"}
	if got := healthErrors(errs, true); !slices.Equal(got, []string{"etcdserver: no leader"}) {
		t.Errorf("with alarms listed: %q, want the no-leader error alone", got)
	}
	// An alarm that AlarmList did not list is nowhere else in the facts: it stays.
	if got := healthErrors(errs, false); !slices.Equal(got, errs) {
		t.Errorf("without alarms listed: %q, want %q", got, errs)
	}
	if len(errs) != 2 {
		t.Errorf("the input was changed: %q", errs)
	}
}
