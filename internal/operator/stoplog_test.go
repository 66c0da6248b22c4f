package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// The calls of the manager, its controllers and client-go's leader election around a stop, in the
// order controller-runtime v0.23 makes them (pkg/manager/internal.go): once the stop is requested, an
// error caused by its cancellation is info, and so is the "leader election lost" the manager reports
// once it has stopped the controllers and cancelled leader election; the same reports before, and
// any other error, stay errors.
func TestStopAwareLogger(t *testing.T) {
	t.Parallel()
	lost := errors.New(managerLeaderElectionLost)
	// What client-go's REST client returns for a request whose context was cancelled.
	canceled := &url.Error{Op: "Patch", URL: "https://127.0.0.1:6443/apis/etcd-operator.cozystack.io/v1alpha2/namespaces/ops/etcdclusters/etcd/status", Err: context.Canceled}
	passCut := fmt.Errorf("patching EtcdCluster status: %w", canceled)
	tests := []struct {
		name string
		log  func(l logr.Logger, stop func())
		want []logged
	}{
		{
			name: "clean stop",
			log: func(l logr.Logger, stop func()) {
				stop()
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
			name: "pass cut short by the stop",
			log: func(l logr.Logger, stop func()) {
				l.Error(passCut, "Reconciler error")
				stop()
				l.WithName("etcdcluster").Error(passCut, "Reconciler error")
				l.Error(errors.New("patching EtcdCluster status: the object has been modified"), "Reconciler error")
			},
			want: []logged{
				{Level: "error", Msg: "Reconciler error", Error: passCut.Error()},
				{Level: "info", Msg: "Reconciler error", Logger: "etcdcluster", CanceledByStop: passCut.Error()},
				{Level: "error", Msg: "Reconciler error", Error: "patching EtcdCluster status: the object has been modified"},
			},
		},
		{
			name: "Lease request cancelled by the stop",
			log: func(l logr.Logger, stop func()) {
				l.Error(canceled, "Error retrieving lease lock", "lock", "ops/lease")
				stop()
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
			log: func(l logr.Logger, stop func()) {
				stop()
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
			name: "Lease lost after a manager failure, not a requested stop",
			log: func(l logr.Logger, _ func()) {
				l.Info(managerCachesStopping)
				l.Error(lost, managerErrorAfterStop)
				l.Error(canceled, "Error retrieving lease lock")
			},
			want: []logged{
				{Level: "info", Msg: managerCachesStopping},
				{Level: "error", Msg: managerErrorAfterStop, Error: managerLeaderElectionLost},
				{Level: "error", Msg: "Error retrieving lease lock", Error: canceled.Error()},
			},
		},
		{
			name: "other errors after the controllers stopped",
			log: func(l logr.Logger, stop func()) {
				stop()
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
			log: func(l logr.Logger, stop func()) {
				stop()
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
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			l := StopAwareLogger(NewLogger(LogOptions{Level: zapcore.InfoLevel, Format: LogFormatJSON}, &buf), ctx.Done())
			tt.log(l, cancel)
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

// At --log-level=error the replaced records are dropped like any other info record.
func TestStopAwareLoggerAtErrorLevel(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l := StopAwareLogger(NewLogger(LogOptions{Level: zapcore.ErrorLevel, Format: LogFormatJSON}, &buf), ctx.Done())
	l.Info(managerCachesStopping)
	l.Error(errors.New(managerLeaderElectionLost), managerErrorAfterStop)
	l.Error(fmt.Errorf("patching: %w", context.Canceled), "Reconciler error")
	if buf.Len() != 0 {
		t.Fatalf("logged at error level:\n%s", buf.String())
	}
}

func TestStopAwareLoggerDiscard(t *testing.T) {
	t.Parallel()
	l := StopAwareLogger(logr.Discard(), nil)
	l.Info(managerCachesStopping)
	l.Error(errors.New(managerLeaderElectionLost), managerErrorAfterStop)
}
