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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
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

// leaseAttemptMessage is what client-go logs when a replica starts competing for the Lease.
const leaseAttemptMessage = `"msg":"Attempting to acquire leader lease..."`

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

// TestCleanStopLogsNoError stops a standby and then the leader with SIGTERM and checks that neither
// logs anything at error level. Both run in this test binary (startOperatorInProcess), which waits for
// the manager's stop sequence to end before it exits, so that a record that sequence writes after
// operator.Run returned is in the logs every time instead of only when it wins the race with the exit:
// controller-runtime reports the end of leader election on every stop, a standby's included, as
// "leader election lost" (docs/operator.md, "Leader election").
func TestCleanStopLogsNoError(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	namespace := createNamespace(ctx, t)

	leader := startOperatorInProcess(t, namespace, "in-process leader", nil)
	waitForLeaseHolder(ctx, t, leader, namespace, "")
	leader.waitForMetrics(ctx, t, leaderMetric)
	leader.waitForControllers(ctx, t, controllerNames...)

	standby := startOperatorInProcess(t, namespace, "in-process standby", nil)
	standby.waitForStatus(ctx, t, standby.probeURL+"/readyz")
	standby.waitForLog(ctx, t, leaseAttemptMessage)
	standby.stop(t)
	assertStructuredLogs(t, standby.logs.String())

	leader.stop(t)
	assertLeaseReleased(ctx, t, namespace)
	assertStructuredLogs(t, leader.logs.String())
}

// TestStopDuringAPassLogsNoError stops the operator with SIGTERM while a reconcile pass is under
// way: the pass that creates a new cluster's seed member is held right after the create
// (runInProcess, holdAtEnv) until the stop is requested, then goes on with its context cancelled,
// so its next request, the status patch, fails with "context canceled". That is the stop, not a
// failure, and must not be logged as an error. It does not run in parallel with the other tests:
// their operators watch every namespace and would reconcile this cluster too.
func TestStopDuringAPassLogsNoError(t *testing.T) {
	ctx := t.Context()
	namespace := createNamespace(ctx, t)
	removeClustersAfterTest(t, namespace)
	op := startOperatorInProcess(t, namespace, "held", []string{holdAtEnv + "=" + failpoint.SeedCreated},
		"--watch-namespaces="+namespace)
	op.waitForControllers(ctx, t, controllerNames...)

	cluster := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "etcd"},
		Spec:       etcdv1alpha2.EtcdClusterSpec{Version: "3.6.5", Replicas: ptr.To[int32](1)},
	}
	if err := admin.Create(ctx, cluster); err != nil {
		t.Fatalf("creating EtcdCluster: %v", err)
	}
	op.waitForLog(ctx, t, `"msg":"`+holdingMessage+`"`)
	op.stop(t)
	logs := op.logs.String()
	assertStructuredLogs(t, logs)
	if !strings.Contains(logs, `"canceledByStop":`) {
		t.Errorf("no record with canceledByStop: the stop did not cut the held pass short, so this test no longer " +
			"shows what a stop during a pass logs")
	}
}

func createNamespace(ctx context.Context, t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "etcd-operator-"}}
	if err := admin.Create(ctx, ns); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	if err := grantLeaseRole(ctx, admin, ns.Name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// t.Context is already cancelled during cleanup.
		if err := admin.Delete(context.Background(), ns); err != nil {
			t.Errorf("deleting namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

// removeClustersAfterTest deletes, once the test is over, every EtcdCluster and EtcdMember in
// namespace, finalizers and all. The operators of later tests watch every namespace, and envtest
// runs no namespace controller or garbage collector, so nothing else would remove them: a cluster
// left half-way through its bootstrap would be reconciled on by those operators, whose writes to
// a namespace being deleted are refused, and they would log those refusals as errors.
func removeClustersAfterTest(t *testing.T, namespace string) {
	t.Helper()
	t.Cleanup(func() {
		// t.Context is already cancelled during cleanup.
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		var members etcdv1alpha2.EtcdMemberList
		var clusters etcdv1alpha2.EtcdClusterList
		if err := errors.Join(admin.List(ctx, &members, client.InNamespace(namespace)),
			admin.List(ctx, &clusters, client.InNamespace(namespace))); err != nil {
			t.Errorf("listing what the test left in namespace %s: %v", namespace, err)
			return
		}
		objects := make([]client.Object, 0, len(members.Items)+len(clusters.Items))
		for i := range members.Items {
			objects = append(objects, &members.Items[i])
		}
		for i := range clusters.Items {
			objects = append(objects, &clusters.Items[i])
		}
		noFinalizers := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
		for _, o := range objects {
			if err := client.IgnoreNotFound(errors.Join(admin.Patch(ctx, o, noFinalizers), admin.Delete(ctx, o))); err != nil {
				t.Errorf("removing %T %s/%s: %v", o, namespace, o.GetName(), err)
			}
		}
	})
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
