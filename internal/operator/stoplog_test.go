package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
)

// logged is one JSON record of NewLogger.
type logged struct {
	Level          string `json:"level"`
	Msg            string `json:"msg"`
	Error          string `json:"error"`
	Logger         string `json:"logger"`
	Lock           string `json:"lock"`
	ManagerReport  string `json:"managerReport"`
	CanceledByStop string `json:"canceledByStop"`
}

func parseRecords(t *testing.T, out string) []logged {
	t.Helper()
	var records []logged
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r logged
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("not a JSON record: %q", line)
		}
		records = append(records, r)
	}
	return records
}

// The calls of the manager and of client-go's leader election on a stop, in the order
// controller-runtime v0.23 makes them (pkg/manager/internal.go): the "leader election lost" the
// manager reports once it has cancelled leader election, and a Lease request that cancellation cut
// short, are info; the same reports while the controllers still run, and any other error, stay
// errors.
func TestStopAwareLogger(t *testing.T) {
	t.Parallel()
	lost := errors.New(managerLeaderElectionLost)
	// What client-go's REST client returns for a request whose context was cancelled.
	canceled := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/apis/coordination.k8s.io/v1/namespaces/ops/leases/lease", Err: context.Canceled}
	tests := []struct {
		name string
		log  func(logr.Logger)
		want []logged
	}{
		{
			name: "clean stop",
			log: func(l logr.Logger) {
				l.Info("Stopping and waiting for leader election runnables")
				l.Info(managerCachesStopping)
				l.Info("Wait completed, proceeding to shutdown the manager")
				l.Error(lost, managerErrorAfterStop)
			},
			want: []logged{
				{Level: "info", Msg: "Stopping and waiting for leader election runnables"},
				{Level: "info", Msg: managerCachesStopping},
				{Level: "info", Msg: "Wait completed, proceeding to shutdown the manager"},
				{Level: "info", Msg: leaderElectionEndedMessage, ManagerReport: managerLeaderElectionLost},
			},
		},
		{
			name: "Lease request cancelled by the stop",
			log: func(l logr.Logger) {
				l.Error(canceled, "Error retrieving lease lock", "lock", "ops/lease")
				l.Info(managerCachesStopping)
				l.Error(canceled, "Error retrieving lease lock", "lock", "ops/lease")
			},
			want: []logged{
				{Level: "error", Msg: "Error retrieving lease lock", Error: canceled.Error(), Lock: "ops/lease"},
				{Level: "info", Msg: managerCachesStopping},
				{Level: "info", Msg: "Error retrieving lease lock", Lock: "ops/lease", CanceledByStop: canceled.Error()},
			},
		},
		{
			name: "Lease lost while the controllers stop",
			log: func(l logr.Logger) {
				l.Info("Stopping and waiting for leader election runnables")
				l.Error(lost, managerErrorAfterStop)
				l.Info(managerCachesStopping)
			},
			want: []logged{
				{Level: "info", Msg: "Stopping and waiting for leader election runnables"},
				{Level: "error", Msg: managerErrorAfterStop, Error: managerLeaderElectionLost},
				{Level: "info", Msg: managerCachesStopping},
			},
		},
		{
			name: "other errors after the controllers stopped",
			log: func(l logr.Logger) {
				l.Info(managerCachesStopping)
				l.Error(errors.New("failed to start caches"), managerErrorAfterStop)
				l.Error(lost, "Failed to release lease")
				l.Error(context.DeadlineExceeded, "Failed to release lease")
			},
			want: []logged{
				{Level: "info", Msg: managerCachesStopping},
				{Level: "error", Msg: managerErrorAfterStop, Error: "failed to start caches"},
				{Level: "error", Msg: "Failed to release lease", Error: managerLeaderElectionLost},
				{Level: "error", Msg: "Failed to release lease", Error: context.DeadlineExceeded.Error()},
			},
		},
		{
			name: "derived loggers share what the manager logged",
			log: func(l logr.Logger) {
				l.WithName("manager").WithValues("k", "v").Info(managerCachesStopping)
				l.WithName("other").Error(lost, managerErrorAfterStop)
			},
			want: []logged{
				{Level: "info", Msg: managerCachesStopping, Logger: "manager"},
				{Level: "info", Msg: leaderElectionEndedMessage, Logger: "other", ManagerReport: managerLeaderElectionLost},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			tt.log(stopAwareLogger(NewLogger(LogOptions{Level: zapcore.InfoLevel, Format: LogFormatJSON}, &buf)))
			got := parseRecords(t, buf.String())
			if len(got) != len(tt.want) {
				t.Fatalf("%d records, want %d:\n%s", len(got), len(tt.want), buf.String())
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("record %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// At --log-level=error the replaced record is dropped like any other info record.
func TestStopAwareLoggerAtErrorLevel(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := stopAwareLogger(NewLogger(LogOptions{Level: zapcore.ErrorLevel, Format: LogFormatJSON}, &buf))
	l.Info(managerCachesStopping)
	l.Error(errors.New(managerLeaderElectionLost), managerErrorAfterStop)
	if buf.Len() != 0 {
		t.Fatalf("logged at error level:\n%s", buf.String())
	}
}

func TestStopAwareLoggerDiscard(t *testing.T) {
	t.Parallel()
	l := stopAwareLogger(logr.Discard())
	l.Info(managerCachesStopping)
	l.Error(errors.New(managerLeaderElectionLost), managerErrorAfterStop)
}
