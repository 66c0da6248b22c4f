//go:build e2e

package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// defragQuota is the small backend quota the NOSPACE scenario fills: a few seconds of writes.
const defragQuota = 32 << 20

// defragTimeout bounds one run over 3 small members, with the operator's admission and
// one pass per member.
const defragTimeout = 3 * time.Minute

// TestDefragNoSpace fills a 3-member cluster with a 32 MiB quota to etcd's NOSPACE alarm under
// write traffic, compacts its history as a person would, and runs an EtcdDefrag with the
// default rule (docs/defrag.md): the cluster reports Degraded=True/AlarmActive, the run is
// admitted during the alarm, defragments every member, the alarm is disarmed and writes
// succeed again. Then an EtcdDefragPolicy on a once-a-minute schedule with rule all runs
// once more under the same traffic. Records defrag-nospace-member-{1,2,3},
// defrag-nospace-total, defrag-nospace-recovery, defrag-policy-member-{1,2,3} and
// defrag-write-gap-max (the longest gap between successful writes while the policy's run
// defragmented; target ≤ 2 s).
func TestDefragNoSpace(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Disruptive)
	requireOperator(f)
	const name = "nospace"
	ec := newCluster(f, name, 3)
	ec.Spec.Options = &etcdv1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](defragQuota)}
	createCluster(f, ec)
	waitConverged(f, name, 3, bootstrapTimeout)
	cli, _ := dialVoters(f, name)
	w := startWriter(f, cli)

	fill(f, cli)
	waitCondition(f, name, etcdv1alpha2.ConditionDegraded, metav1.ConditionTrue, "AlarmActive", 2*time.Minute)
	ctx, cancel := context.WithTimeout(f.Ctx, 30*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "defrag/fill/0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatalf("compacting under NOSPACE: %v", err)
	}

	start := time.Now()
	run := &etcdv1alpha2.EtcdDefrag{ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: "recover"},
		Spec: etcdv1alpha2.EtcdDefragSpec{ClusterRef: corev1.LocalObjectReference{Name: name}}}
	if err := kc(f).Create(f.Ctx, run); err != nil {
		t.Fatal(err)
	}
	done := watchRun(f, run.Name)
	f.Record("defrag-nospace-total", done.Sub(start), "EtcdDefrag created → Complete, 3 members, NOSPACE disarmed")
	var recovered time.Time
	err = f.Poll("a successful write after the run", 30*time.Second, func(context.Context) (bool, string, error) {
		recovered = w.firstSuccessAfter(start)
		return !recovered.IsZero(), "last write error: " + w.lastError(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	recordMemberTimes(f, run.Name, "defrag-nospace", "NOSPACE recovery, default rule")
	f.Record("defrag-nospace-recovery", recovered.Sub(start), "EtcdDefrag created → first successful write")
	alarms, err := cli.AlarmList(ctx)
	if err != nil || len(alarms.Alarms) != 0 {
		t.Fatalf("alarms after the run: %v, %v", alarms, err)
	}
	waitCondition(f, name, etcdv1alpha2.ConditionDegraded, metav1.ConditionFalse, "QuorumHealthy", time.Minute)

	// The gap is measured from the policy's creation to its run's end: a window holding the
	// whole run (admission, every member, the leadership move) and idle time, which has none.
	began := time.Now()
	policy := &etcdv1alpha2.EtcdDefragPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: "minutely"},
		Spec: etcdv1alpha2.EtcdDefragPolicySpec{ClusterRef: corev1.LocalObjectReference{Name: name}, Schedule: "* * * * *",
			Rule: &etcdv1alpha2.DefragRule{All: true}, HistoryLimit: ptr.To[int32](1)}}
	if err := kc(f).Create(f.Ctx, policy); err != nil {
		t.Fatal(err)
	}
	runName := waitPolicyRun(f, policy.Name)
	// Suspended, not deleted: deleting the policy would delete its run (it owns it) mid-run.
	suspended := policy.DeepCopy()
	suspended.Spec.Suspend = ptr.To(true)
	if err := kc(f).Patch(f.Ctx, suspended, client.MergeFrom(policy)); err != nil {
		t.Error(err)
	}
	ended := watchRun(f, runName)
	recordMemberTimes(f, runName, "defrag-policy", "policy run, rule all, under write traffic")
	gap := w.longestGap(began, ended)
	f.Record("defrag-write-gap-max", gap, "longest gap between successful writes during the policy's run (target ≤ 2 s)")
	w.stop()
}

// fill overwrites a few keys with 256 KiB values until etcd refuses a write with NOSPACE.
func fill(f *framework.Test, cli *clientv3.Client) {
	f.T.Helper()
	value := strings.Repeat("x", 256<<10)
	for i := range 2000 {
		ctx, cancel := context.WithTimeout(f.Ctx, 10*time.Second)
		_, err := cli.Put(ctx, fmt.Sprintf("defrag/fill/%d", i%4), value)
		cancel()
		if errors.Is(err, rpctypes.ErrNoSpace) {
			return
		}
		if err != nil {
			f.T.Fatalf("fill write %d: %v", i, err)
		}
	}
	f.T.Fatal("2000 writes of 256 KiB did not reach the quota")
}

// watchRun polls run name until it is final and fails the test unless it ends Complete with 3
// members defragmented, the leader last. It returns when the run was seen final.
func watchRun(f *framework.Test, name string) time.Time {
	f.T.Helper()
	run := &etcdv1alpha2.EtcdDefrag{}
	err := f.Poll("EtcdDefrag "+name+" final", defragTimeout, func(ctx context.Context) (bool, string, error) {
		if err := kc(f).Get(ctx, client.ObjectKey{Namespace: f.Namespace, Name: name}, run); err != nil {
			return false, err.Error(), nil
		}
		return run.Status.Phase == etcdv1alpha2.DefragPhaseComplete || run.Status.Phase == etcdv1alpha2.DefragPhaseFailed,
			fmt.Sprintf("phase %s, %d defragmented", run.Status.Phase, run.Status.Defragmented), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	if run.Status.Phase != etcdv1alpha2.DefragPhaseComplete || run.Status.Defragmented != 3 {
		f.T.Fatalf("EtcdDefrag %s: %+v", name, run.Status)
	}
	if ms := run.Status.Members; ms[2].Role != etcdv1alpha2.DefragRoleLeader {
		f.T.Errorf("EtcdDefrag %s: the leader did not go last: %+v", name, ms)
	}
	return time.Now()
}

// tookInEvent is how long a member's Defragment call took, as its MemberDefragmented Event says.
var tookInEvent = regexp.MustCompile(`^defragmented member (\S+) \(\S+\) in ([^:]+):`)

// recordMemberTimes records, as <prefix>-member-<n>, how long each member's Defragment call took,
// from the run's MemberDefragmented Events (the operator measures the call itself).
func recordMemberTimes(f *framework.Test, run, prefix, note string) {
	f.T.Helper()
	var evs eventsv1.EventList
	err := f.Poll("3 MemberDefragmented Events of "+run, 30*time.Second, func(ctx context.Context) (bool, string, error) {
		if err := kc(f).List(ctx, &evs, client.InNamespace(f.Namespace)); err != nil {
			return false, err.Error(), nil
		}
		n := 0
		for _, e := range evs.Items {
			if e.Regarding.Name == run && e.Reason == "MemberDefragmented" {
				n++
			}
		}
		return n == 3, fmt.Sprintf("%d Events", n), nil
	})
	if err != nil {
		f.T.Error(err)
		return
	}
	var evts []eventsv1.Event
	for _, e := range evs.Items {
		if e.Regarding.Name == run && e.Reason == "MemberDefragmented" {
			evts = append(evts, e)
		}
	}
	slices.SortFunc(evts, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	for i, e := range evts {
		m := tookInEvent.FindStringSubmatch(e.Note)
		if m == nil {
			f.T.Errorf("MemberDefragmented Event without a duration: %q", e.Note)
			continue
		}
		d, err := time.ParseDuration(m[2])
		if err != nil {
			f.T.Errorf("MemberDefragmented Event %q: %v", e.Note, err)
			continue
		}
		f.Record(fmt.Sprintf("%s-member-%d", prefix, i+1), d, fmt.Sprintf("%s: Defragment of %s", note, m[1]))
	}
}

// waitPolicyRun waits for the policy's first run and returns its name.
func waitPolicyRun(f *framework.Test, policy string) string {
	f.T.Helper()
	var name string
	err := f.Poll("a run of EtcdDefragPolicy "+policy, 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		var runs etcdv1alpha2.EtcdDefragList
		if err := kc(f).List(ctx, &runs, client.InNamespace(f.Namespace), client.MatchingLabels{etcdv1alpha2.LabelDefragPolicy: policy}); err != nil {
			return false, err.Error(), nil
		}
		if len(runs.Items) == 0 {
			return false, "no run yet", nil
		}
		name = runs.Items[0].Name
		return true, name, nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	return name
}

// writer puts a small key every 10 ms and remembers when each put succeeded.
type writer struct {
	mu     sync.Mutex
	oks    []time.Time
	err    error
	cancel context.CancelFunc
	done   chan struct{}
}

func startWriter(f *framework.Test, cli *clientv3.Client) *writer {
	ctx, cancel := context.WithCancel(f.Ctx)
	w := &writer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; ctx.Err() == nil; i++ {
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := cli.Put(pctx, fmt.Sprintf("defrag/traffic/%d", i%16), "v")
			pcancel()
			w.mu.Lock()
			if err == nil {
				w.oks = append(w.oks, time.Now())
			} else {
				w.err = err
			}
			w.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	f.T.Cleanup(w.stop)
	return w
}

func (w *writer) stop() {
	w.cancel()
	<-w.done
}

// lastError is the last write's error, or "none".
func (w *writer) lastError() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		return "none"
	}
	return w.err.Error()
}

// firstSuccessAfter returns the first successful write after t, or the zero time.
func (w *writer) firstSuccessAfter(t time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ok := range w.oks {
		if ok.After(t) {
			return ok
		}
	}
	return time.Time{}
}

// longestGap is the longest time without a successful write in [from, to].
func (w *writer) longestGap(from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	prev, longest := from, time.Duration(0)
	for _, ok := range w.oks {
		if ok.Before(from) || ok.After(to) {
			continue
		}
		longest = max(longest, ok.Sub(prev))
		prev = ok
	}
	return max(longest, to.Sub(prev))
}
