//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdconn"
)

// The canary values whose stored bytes the keyspace-divergence scenario rewrites in one member's
// bbolt file (same length, so bbolt's pages stay well-formed and etcd keeps serving).
const (
	hashCanary         = "hash-canary-value"
	hashCanaryDiverged = "HASH-CANARY-VALUE"
	hashCanaryKeys     = 20
)

// TestPVCMemberKeyspaceDiverged makes one member's keyspace diverge behind the operator's and
// etcd's backs (issue #15, "CORRUPT found by hash"): under write traffic, the stored values of 20
// canary keys are rewritten in place in the member's bbolt file on its node while it runs, so
// it keeps serving other data than its peers and none of etcd's own checks notices (the initial
// check runs at start, the compaction check after a compaction). A CORRUPT alarm with member ID
// 0 is then raised, as etcd 3.5.7 and later raise it when a hash mismatch names no member: the
// operator must compare HashKV at its next pass, name the member (DataCorrupt, and a
// KeyspaceDiverged Warning naming the revision), replace it through the quorum gate, and
// disarm the alarm once a comparison finds every voter equal. End state: 3 voters, every
// acknowledged write present, the canary values intact on every member. Records
// pvc-diverged-heal (alarm → converged).
func TestPVCMemberKeyspaceDiverged(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t)
	dataDirs := f.RequireDataDirFaults()
	signals := f.RequireContainerSignals()
	requireOperator(f)
	const name = "diverged"
	r := startHeal(f, newCluster(f, name, 3))
	victim := pickMember(f, name, pickLastJoiner)
	moveLeaderAway(f, name, victim)
	cli, _ := dialVoters(f, name)
	for i := range hashCanaryKeys {
		if _, err := cli.Put(f.Ctx, canaryKey(i), canaryValue(i)); err != nil {
			t.Fatalf("writing canary key %d: %v", i, err)
		}
	}
	// etcd commits its backend every 100 ms: poll until the values are in the file, and until the
	// victim itself serves a rewritten value. bbolt copies pages on write, so the bytes found may
	// be a stale copy on a free page while the live page still holds the written value: an e2e-full
	// run rewrote only such copies, the comparison rightly found every voter equal, and nothing
	// was replaced. Each rewrite runs with the victim frozen: between reading the file and
	// writing to it, a running etcd may reuse a free page that held a stale copy for a branch or
	// another leaf, and the write then damaged that page; etcd panicked on it and the member
	// crash-looped instead of diverging (an e2e-full run, docs/e2e-lifecycle.md).
	victimEtcd := memberClient(f, victim)
	err := f.Poll("the canary values rewritten in "+victim+"'s bbolt file and served by it", time.Minute, func(ctx context.Context) (bool, string, error) {
		n, err := rewriteFrozen(ctx, f, signals, dataDirs, victim)
		if err != nil || n == 0 {
			return false, fmt.Sprintf("%d occurrences rewritten", n), err
		}
		resp, err := victimEtcd.Get(ctx, canaryKey(0), clientv3.WithSerializable())
		if err != nil || len(resp.Kvs) != 1 {
			return false, fmt.Sprintf("%d rewritten; reading it back: %v", n, err), nil
		}
		got := string(resp.Kvs[0].Value)
		return strings.HasPrefix(got, hashCanaryDiverged), fmt.Sprintf("%d rewritten; %s serves %q", n, victim, got), nil
	})
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	alarm := &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: 0, Alarm: pb.AlarmType_CORRUPT}
	if _, err := pb.NewMaintenanceClient(cli.ActiveConnection()).Alarm(f.Ctx, alarm); err != nil {
		t.Fatalf("raising a CORRUPT alarm with member ID 0: %v", err)
	}
	waitReplaced(f, name, victim, healTimeout)
	f.Record("pvc-diverged-heal", since(start), "PVC member's keyspace diverged (values rewritten in its bbolt file), CORRUPT alarm with member ID 0 → named by HashKV comparison → replaced, converged with 3 voters")
	waitAlarmsCleared(f, name)
	f.Record("pvc-diverged-alarm-disarmed", since(start), "the CORRUPT alarm with member ID 0 disarmed after the replacement (a comparison under it found every voter equal)")

	// The removal follows the naming in the same pass, so the member controller may not get to
	// write Healthy=False first; the removal-reason and the Event are the durable record.
	r.hist.requireRemovalReason(f, victim, health.ReasonDataCorrupt)
	requireHashEvent(f, victim)
	r.finishReplaced(f, "PVC member's keyspace diverged and the member replaced", victim)
	requireCanaries(f, name)
}

// rewriteFrozen rewrites the canary values in member's bbolt file while its container is
// stopped, so that etcd writes no page between the read and the write, and resumes it.
func rewriteFrozen(ctx context.Context, f *framework.Test, signals framework.ContainerSignals, dataDirs framework.DataDirFaults, member string) (int, error) {
	if err := signals.SignalContainer(ctx, f.Namespace, member, desired.ContainerName, "SIGSTOP"); err != nil {
		return 0, err
	}
	n, err := dataDirs.RewriteDataDir(ctx, f.Namespace, member, desired.DataMountPath, []byte(hashCanary), []byte(hashCanaryDiverged))
	// Resume with a context of its own: a member left stopped would fail the scenario for a
	// reason it does not test.
	if cerr := signals.SignalContainer(context.WithoutCancel(ctx), f.Namespace, member, desired.ContainerName, "SIGCONT"); err == nil {
		err = cerr
	}
	return n, err
}

func canaryKey(i int) string { return fmt.Sprintf("hash-canary/%02d", i) }

// memberClient dials one member's own etcd through its Pod IP, closed when the test ends.
func memberClient(f *framework.Test, member string) *clientv3.Client {
	f.T.Helper()
	pod, err := f.Kube.CoreV1().Pods(f.Namespace).Get(f.Ctx, member, metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + pod.Status.PodIP + ":2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(func() { _ = c.Close() })
	return c
}
func canaryValue(i int) string { return fmt.Sprintf("%s-%02d", hashCanary, i) }

// waitAlarmsCleared waits until etcd lists no alarm.
func waitAlarmsCleared(f *framework.Test, name string) {
	f.T.Helper()
	cli, _ := dialVoters(f, name)
	err := f.Poll("no etcd alarm", healTimeout, func(ctx context.Context) (bool, string, error) {
		resp, err := cli.AlarmList(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		return len(resp.Alarms) == 0, fmt.Sprint(resp.Alarms), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
}

// requireHashEvent asserts a KeyspaceDiverged Warning naming the member and the revision.
func requireHashEvent(f *framework.Test, member string) {
	f.T.Helper()
	evs, err := f.Kube.EventsV1().Events(f.Namespace).List(f.Ctx, metav1.ListOptions{FieldSelector: "reason=KeyspaceDiverged"})
	if err != nil {
		f.T.Fatal(err)
	}
	for _, e := range evs.Items {
		if strings.Contains(e.Note, member) && strings.Contains(e.Note, "differs from the majority at revision") {
			f.T.Logf("KeyspaceDiverged: %s", e.Note)
			return
		}
	}
	f.T.Errorf("no KeyspaceDiverged Event naming %s among %d", member, len(evs.Items))
}

// requireCanaries asserts that every voter serves every canary key with the value written.
func requireCanaries(f *framework.Test, name string) {
	f.T.Helper()
	_, eps := dialVoters(f, name)
	for _, ep := range eps {
		c, err := etcdconn.New(f.Ctx, etcdconn.Options{Endpoints: []string{ep}})
		if err != nil {
			f.T.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		for i := range hashCanaryKeys {
			resp, err := c.Get(f.Ctx, canaryKey(i))
			if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != canaryValue(i) {
				f.T.Errorf("%s serves %s as %v (%v), want %s", ep, canaryKey(i), resp, err, canaryValue(i))
			}
		}
	}
}
