package etcdcluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	corev1 "k8s.io/api/core/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcddefrag"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// smallQuota fills in a few seconds of writes: etcd raises NOSPACE once its database file
// would grow past it.
const smallQuota = 16 << 20

// startDefragControllers runs the EtcdDefrag and EtcdDefragPolicy controllers in a manager of
// their own, dialling the world's real etcd processes.
func (w *world) startDefragControllers() {
	t := w.t
	t.Helper()
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{w.ns: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("creating a manager: %v", err)
	}
	pool := etcdclient.NewPool(etcdclient.WithDialer(w.real.dial))
	if err := etcddefrag.SetupWithManager(mgr, pool); err != nil {
		t.Fatal(err)
	}
	if err := etcddefrag.SetupPolicyWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("defrag manager: %v", err)
		}
		_ = pool.Close()
	})
}

// fillToNoSpace overwrites a few keys with large values until etcd refuses a write with
// NOSPACE: the history of every overwrite stays in the database until a compaction.
func fillToNoSpace(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	value := strings.Repeat("x", 256<<10)
	for i := range 1000 {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := cli.Put(ctx, fmt.Sprintf("fill/%d", i%4), value)
		cancel()
		if errors.Is(err, rpctypes.ErrNoSpace) {
			return
		}
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	t.Fatal("1000 writes of 256 KiB did not reach the quota")
}

// TestDefragRecoversFromNoSpace fills a 3-member cluster of real etcd processes with a 16 MiB
// quota to its NOSPACE alarm, compacts its history as a person would, and runs an EtcdDefrag
// with the default rule: the cluster reports Degraded=True/AlarmActive, the run is admitted
// during the alarm, defragments the followers by name and the leader last after moving its
// leadership, disarms NOSPACE once every member is below the quota, and writes succeed again.
func TestDefragRecoversFromNoSpace(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	w.startController()
	w.startDefragControllers()
	const name = "nospace"
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](3), Version: "3.6.5",
			Storage: etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))},
			Options: &etcdv1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](smallQuota)}},
	}
	if err := k8s.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, realConvergeTimeout, "bootstrap of 3 real members", w.converged(name, 3))

	cli := w.real.client(t)
	fillToNoSpace(t, cli)
	wait.Eventually(t, realConvergeTimeout, "Degraded=True/AlarmActive", w.degraded(name, membership.ReasonAlarmActive))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "fill/0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatalf("compacting under NOSPACE: %v", err)
	}

	run := &etcdv1alpha2.EtcdDefrag{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "recover"},
		Spec: etcdv1alpha2.EtcdDefragSpec{ClusterRef: corev1.LocalObjectReference{Name: name}}}
	if err := k8s.Create(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, realConvergeTimeout, "the run is final", func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(run), run); err != nil {
			return err
		}
		if run.Status.Phase != etcdv1alpha2.DefragPhaseComplete {
			return fmt.Errorf("phase %q, conditions %+v", run.Status.Phase, run.Status.Conditions)
		}
		return nil
	})
	checkRun(t, run)

	if _, err := cli.Put(ctx, "after", "defrag"); err != nil {
		t.Fatalf("a write after the run: %v", err)
	}
	alarms, err := cli.AlarmList(ctx)
	if err != nil || len(alarms.Alarms) != 0 {
		t.Fatalf("alarms after the run: %v, %v", alarms, err)
	}
	wait.Eventually(t, realConvergeTimeout, "Degraded=False", w.degraded(name, membership.ReasonQuorumHealthy))
	wait.Eventually(t, convergeTimeout, "one AlarmDisarmed, DefragStarted and LeaderMoved Event", w.eventsOnce(name, "AlarmDisarmed", "DefragStarted", "LeaderMoved"))
}

// checkRun asserts a Complete run over 3 members: each Defragmented with sizes recorded, the
// leader last, finishing times in order, Ready=True.
func checkRun(t *testing.T, run *etcdv1alpha2.EtcdDefrag) {
	t.Helper()
	ms := run.Status.Members
	if len(ms) != 3 || run.Status.Defragmented != 3 || run.Status.StartedAt == nil || run.Status.CompletedAt == nil {
		t.Fatalf("status %+v", run.Status)
	}
	for i, m := range ms {
		if m.Outcome != etcdv1alpha2.DefragOutcomeDefragmented || m.DBSizeBefore < m.DBSizeAfter || m.DBSizeAfter == 0 ||
			m.ReclaimedBytes != m.DBSizeBefore-m.DBSizeAfter || m.FinishedAt == nil {
			t.Errorf("member %d: %+v", i, m)
		}
		if want := i == 2; (m.Role == etcdv1alpha2.DefragRoleLeader) != want {
			t.Errorf("member %d %s has role %s: the leader goes last", i, m.Name, m.Role)
		}
		if i > 0 && m.FinishedAt.Before(ms[i-1].FinishedAt) {
			t.Errorf("member %s finished before %s", m.Name, ms[i-1].Name)
		}
	}
	if ms[0].Name > ms[1].Name {
		t.Errorf("followers not by name: %s, %s", ms[0].Name, ms[1].Name)
	}
	if ms[2].DBSizeAfter >= smallQuota {
		t.Errorf("the leader is still at the quota: %+v", ms[2])
	}
	if !meta.IsStatusConditionTrue(run.Status.Conditions, etcdv1alpha2.ConditionReady) {
		t.Errorf("conditions %+v", run.Status.Conditions)
	}
}

// degraded checks the cluster's Degraded reason.
func (w *world) degraded(name, reason string) func() error {
	return func() error {
		c := &etcdv1alpha2.EtcdCluster{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: name}, c); err != nil {
			return err
		}
		d := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionDegraded)
		if d == nil || d.Reason != reason {
			return fmt.Errorf("Degraded %+v, want reason %s", d, reason)
		}
		return nil
	}
}
