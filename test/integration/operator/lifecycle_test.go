package operator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// leaseName is the leader-election Lease (docs/api.md, "Objects and their names").
const leaseName = "aa20b3a9.etcd-operator.cozystack.io"

// controllerNames are the controllers the operator registers; a clean stop waits for all of them.
var controllerNames = []string{"etcdcluster", "etcdmember"}

// Metric lines that tell whether a replica leads. client-go sets the gauge to 1 when the replica
// acquires the Lease; a standby has no such series until it first leads.
var (
	leaderMetric   = `leader_election_master_status{name="` + leaseName + `"} 1`
	goRuntimeTypes = "# TYPE go_goroutines gauge"
)

// TestOperatorLifecycle starts the real binary with leader election on, as a user holding only the
// generated ClusterRole, checks the probes, the metrics, the Lease and the logs, then sends SIGTERM
// and checks for a clean exit that releases the Lease.
func TestOperatorLifecycle(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	namespace := createNamespace(ctx, t)

	op := startOperator(t, namespace, "only")
	op.waitForStatus(ctx, t, op.probeURL+"/healthz")
	op.waitForStatus(ctx, t, op.probeURL+"/readyz")
	holder := waitForLeaseHolder(ctx, t, op, namespace, "")
	t.Logf("Lease %s/%s held by %s", namespace, leaseName, holder)
	// go_goroutines proves the Go runtime collectors are on the operator's registry.
	op.waitForMetrics(ctx, t, goRuntimeTypes, leaderMetric)
	op.waitForControllers(ctx, t, controllerNames...)

	op.stop(t)
	assertLeaseReleased(ctx, t, namespace)
	assertStructuredLogs(t, op.logs.String())
}

// TestStandbyTakesOver runs two replicas: one leads, the other is a ready standby that does not lead.
// After SIGTERM the leader releases the Lease, and the standby takes it over.
func TestStandbyTakesOver(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	namespace := createNamespace(ctx, t)

	first := startOperator(t, namespace, "first")
	firstHolder := waitForLeaseHolder(ctx, t, first, namespace, "")
	first.waitForMetrics(ctx, t, leaderMetric)
	first.waitForControllers(ctx, t, controllerNames...)

	second := startOperator(t, namespace, "second")
	// A standby is healthy and ready: readiness does not depend on leading, so a rollout can proceed
	// while the old replica still holds the Lease.
	second.waitForStatus(ctx, t, second.probeURL+"/healthz")
	second.waitForStatus(ctx, t, second.probeURL+"/readyz")
	second.waitForMetrics(ctx, t, goRuntimeTypes)
	if _, body, err := get(ctx, second.metricsURL); err != nil || strings.Contains(body, leaderMetric) {
		t.Fatalf("the standby reports itself as leader while %s holds the Lease (error %v)", firstHolder, err)
	}

	stopped := time.Now()
	first.stop(t)
	secondHolder := waitForLeaseHolder(ctx, t, second, namespace, firstHolder)
	second.waitForMetrics(ctx, t, leaderMetric)
	// Reported, not asserted (TESTING.md, "e2e"): with the Lease released this is about one retry
	// period (2 s), instead of the 15 s lease duration.
	t.Logf("Lease passed from %s to %s %v after SIGTERM", firstHolder, secondHolder,
		time.Since(stopped).Round(time.Millisecond))

	second.waitForControllers(ctx, t, controllerNames...)
	second.stop(t)
	assertLeaseReleased(ctx, t, namespace)
	assertStructuredLogs(t, first.logs.String())
	assertStructuredLogs(t, second.logs.String())
}

func createNamespace(ctx context.Context, t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "etcd-operator-"}}
	if err := admin.Create(ctx, ns); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	t.Cleanup(func() {
		// t.Context is already cancelled during cleanup.
		if err := admin.Delete(context.Background(), ns); err != nil {
			t.Errorf("deleting namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

// waitForLeaseHolder waits until the Lease has a holder other than notHolder, and returns it.
func waitForLeaseHolder(ctx context.Context, t *testing.T, op *operator, namespace, notHolder string) string {
	t.Helper()
	var holder string
	op.poll(ctx, t, "Lease "+leaseName+" to be acquired", func(ctx context.Context) error {
		var lease coordinationv1.Lease
		if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: leaseName}, &lease); err != nil {
			return err
		}
		switch h := lease.Spec.HolderIdentity; {
		case h == nil || *h == "":
			return errors.New("the Lease has no holder")
		case *h == notHolder:
			return fmt.Errorf("the Lease is still held by %s", notHolder)
		default:
			holder = *h
			return nil
		}
	})
	return holder
}

// assertLeaseReleased checks what client-go writes when it releases the Lease: no holder and a 1 s
// duration, so that a standby can take over at once.
func assertLeaseReleased(ctx context.Context, t *testing.T, namespace string) {
	t.Helper()
	var lease coordinationv1.Lease
	if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: leaseName}, &lease); err != nil {
		t.Fatalf("reading the Lease after exit: %v", err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("Lease still held by %q after a clean exit; want it released", *h)
	}
	if d := lease.Spec.LeaseDurationSeconds; d == nil || *d != 1 {
		t.Errorf("Lease duration after release = %v, want 1", d)
	}
}

// assertStructuredLogs checks that every line the operator wrote is a JSON log record, including the
// lines of client-go's leader election, that nothing was logged at error level, and that the start
// and the stop were logged.
func assertStructuredLogs(t *testing.T, logs string) {
	t.Helper()
	var started, stopped bool
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var record struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
			TS    string `json:"ts"`
		}
		if err := json.Unmarshal([]byte(line), &record); err != nil || record.Level == "" || record.TS == "" {
			t.Errorf("log line is not a JSON record with level and ts: %q", line)
			continue
		}
		if record.Level == "error" {
			t.Errorf("error logged during a clean start and stop: %s", line)
		}
		started = started || record.Msg == "Starting etcd-operator"
		stopped = stopped || record.Msg == "Stopped etcd-operator"
	}
	if !started || !stopped {
		t.Errorf("logs lack the start (%t) or stop (%t) record", started, stopped)
	}
}
