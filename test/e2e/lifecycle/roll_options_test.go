//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestRollingUpdateOptions changes the etcd options of a 3-member PVC cluster under write
// traffic (snapshot count and periodic auto-compaction): options are etcd flags, read only at
// start, so every member restarts with the same member ID. Records roll-options-{1,2,3},
// roll-options-total and write-gap-max.
func TestRollingUpdateOptions(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)
	requireOperator(f)
	const name = "rollopt"
	createCluster(f, newCluster(f, name, 3))
	ec := waitConverged(f, name, 3, bootstrapTimeout)
	clusterID := ec.Status.ClusterID
	before := checkMembership(f, ec, 3)
	load := startLoad(f, name)
	obs := observeMembership(f, name)

	roll(f, name, "roll-options", "options change on 3 PVC members", before, func(s *etcdv1alpha2.EtcdClusterSpec) {
		s.Options = &etcdv1alpha2.EtcdOptions{
			SnapshotCount:           ptr.To[int64](5000),
			AutoCompactionMode:      etcdv1alpha2.AutoCompactionPeriodic,
			AutoCompactionRetention: "30m",
		}
	})
	requireRunningTemplate(f, name, requireFlags("--snapshot-count=5000", "--auto-compaction-mode=periodic", "--auto-compaction-retention=30m"))
	obs.check(f, clusterID)
	requireHealed(f, name, 3, clusterID)
	load.verify(f, "options change rolled across 3 PVC members")
}

// requireFlags checks that a member Pod's etcd container runs with every flag in want.
func requireFlags(want ...string) func(*corev1.Pod) error {
	return func(p *corev1.Pod) error {
		args := p.Spec.Containers[0].Args
		for _, w := range want {
			if !slices.Contains(args, w) {
				return fmt.Errorf("etcd runs without %s: %v", w, args)
			}
		}
		return nil
	}
}

// haltTimeout bounds the wait for a halted roll: the first member's graceful restart, then the
// operator's memberStartGrace (5 min by default) before the member counts as StartFailed.
const haltTimeout = 8 * time.Minute

// badRetention passes the API's pattern (a duration) but not etcd: 9,999,999,999 hours
// overflows Go's time.Duration, so etcd exits at start with "error parsing
// CompactionRetention: time: invalid duration" (checked against etcd 3.6.16 by hand). The exit
// is a plain fatal error, not one the operator classifies as data loss or corruption, so the
// member is not replaced: the roll halts on it.
const badRetention = "9999999999h"

// TestRollHaltsOnBadOptionAndResumes rolls an options value etcd refuses at start onto a 3-member
// PVC cluster under write traffic. The first restarted member never becomes Ready; the roll must
// stop there (docs/design/rolling-updates.md, "Halt": no second member restarted, nothing replaced,
// quorum kept), and after memberStartGrace report it: the member Healthy=False/StartFailed, the
// cluster Degraded=True/MemberStartFailed and Progressing=True/RollingUpdate "roll halted: …". Then
// the spec is corrected and adopted at once by moving status.progressDeadline into the past (the
// documented way, docs/lifecycle.md "Read the conditions"); the roll resumes with the member that
// failed and converges with the same member IDs. Records roll-halt (spec patched → halt reported),
// roll-resume-{1,2,3}, roll-resume-total and write-gap-max.
func TestRollHaltsOnBadOptionAndResumes(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t)
	requireOperator(f)
	const name = "rollhalt"
	createCluster(f, newCluster(f, name, 3))
	ec := waitConverged(f, name, 3, bootstrapTimeout)
	clusterID := ec.Status.ClusterID
	before := checkMembership(f, ec, 3)
	load := startLoad(f, name)
	obs := observeMembership(f, name)

	halt := sampleRoll(f, name)
	start := time.Now()
	patchSpec(f, name, func(s *etcdv1alpha2.EtcdClusterSpec) {
		s.Options = &etcdv1alpha2.EtcdOptions{AutoCompactionMode: etcdv1alpha2.AutoCompactionPeriodic, AutoCompactionRetention: badRetention}
	})
	ec = waitHalted(f, name)
	f.Record("roll-halt", since(start), "options value etcd refuses (auto-compaction-retention "+badRetention+"): spec patched → Degraded=True/MemberStartFailed, roll halted (memberStartGrace 5 min included)")
	halt.stop()
	failed := requireHaltedOnOne(f, name, halt, ec)
	ackedHalted := load.acked()
	waitAcked(f, load.gen, ackedHalted+20)
	t.Logf("roll halted on %s: %s; writes still acknowledged with 2 of 3 members", failed, condSummary(ec.Status.Conditions))

	// The correction: a valid retention. The halted target stays latched until the deadline, so
	// the corrected spec is adopted at once by moving the deadline into the past.
	resume := sampleRoll(f, name)
	start = time.Now()
	patchSpec(f, name, func(s *etcdv1alpha2.EtcdClusterSpec) {
		s.Options = &etcdv1alpha2.EtcdOptions{AutoCompactionMode: etcdv1alpha2.AutoCompactionPeriodic, AutoCompactionRetention: "1h"}
	})
	expireDeadline(f, name)
	ec = waitConverged(f, name, 3, rollTimeout)
	f.Record("roll-resume-total", since(start), "corrected options after a halted roll: spec patched and deadline moved → converged, every member on the corrected template")
	resume.record(f, "roll-resume", "corrected options after a halted roll")
	resume.mu.Lock()
	order := slices.Clone(resume.order)
	resume.mu.Unlock()
	if len(order) == 0 || order[0] != failed {
		t.Errorf("members restarted after the fix in order %v: the member that failed to start (%s) goes first", order, failed)
	}
	if ec.Status.UpdatedMembers != 3 {
		t.Errorf("updatedMembers %d, want 3", ec.Status.UpdatedMembers)
	}
	if after := checkMembership(f, ec, 3); !maps.Equal(after, before) {
		t.Errorf("members %v, were %v: a member was replaced instead of restarted", after, before)
	}
	requireRunningTemplate(f, name, requireFlags("--auto-compaction-retention=1h"))
	obs.check(f, clusterID)
	requireHealed(f, name, 3, clusterID)
	load.verify(f, "roll halted by a bad option value, resumed after the fix, on 3 PVC members")
}

// waitHalted waits until the cluster reports its roll halted on a member that failed to start.
func waitHalted(f *framework.Test, name string) *etcdv1alpha2.EtcdCluster {
	f.T.Helper()
	var ec *etcdv1alpha2.EtcdCluster
	err := f.Poll("roll halted (Degraded=True/MemberStartFailed)", haltTimeout, func(ctx context.Context) (bool, string, error) {
		var err error
		ec, err = getCluster(ctx, f, name)
		if err != nil {
			return false, errState(ctx, err), nil
		}
		d := meta.FindStatusCondition(ec.Status.Conditions, etcdv1alpha2.ConditionDegraded)
		p := meta.FindStatusCondition(ec.Status.Conditions, etcdv1alpha2.ConditionProgressing)
		ok := d != nil && d.Status == metav1.ConditionTrue && d.Reason == membership.ReasonMemberStartFailed &&
			p != nil && p.Status == metav1.ConditionTrue && p.Reason == membership.ReasonRollingUpdate && strings.Contains(p.Message, "roll halted: ")
		return ok, clusterState(ec), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	return ec
}

// requireHaltedOnOne checks a halted roll: exactly one member Pod was replaced (the sampler saw
// one member going and never two Pods down at once), that member is Healthy=False/StartFailed,
// named by the conditions, the other two run their old Pods and are Ready, and etcd still lists
// the three members. It returns the failed member.
func requireHaltedOnOne(f *framework.Test, name string, s *rollSampler, ec *etcdv1alpha2.EtcdCluster) string {
	f.T.Helper()
	s.mu.Lock()
	order, maxDown := slices.Clone(s.order), s.maxDown
	s.mu.Unlock()
	if len(order) != 1 {
		f.T.Fatalf("members restarted by the bad template: %v, want exactly one (the roll must halt on the first)", order)
	}
	failed := order[0]
	if maxDown > 1 {
		f.T.Errorf("%d member Pods were down at once during the halted roll", maxDown)
	}
	if ec.Status.ReadyMembers != 2 {
		f.T.Errorf("readyMembers %d while halted, want 2", ec.Status.ReadyMembers)
	}
	d := meta.FindStatusCondition(ec.Status.Conditions, etcdv1alpha2.ConditionDegraded)
	p := meta.FindStatusCondition(ec.Status.Conditions, etcdv1alpha2.ConditionProgressing)
	for _, c := range []*metav1.Condition{d, p} {
		if !strings.Contains(c.Message, failed) {
			f.T.Errorf("%s message %q does not name the member that failed (%s)", c.Type, c.Message, failed)
		}
	}
	a := meta.FindStatusCondition(ec.Status.Conditions, etcdv1alpha2.ConditionAvailable)
	if a == nil || a.Status != metav1.ConditionTrue {
		f.T.Errorf("Available %+v while halted with 2 of 3 Ready, want True (quorum kept)", a)
	}
	var m etcdv1alpha2.EtcdMember
	if err := kc(f).Get(f.Ctx, client.ObjectKey{Namespace: f.Namespace, Name: failed}, &m); err != nil {
		f.T.Fatal(err)
	}
	if h := meta.FindStatusCondition(m.Status.Conditions, etcdv1alpha2.ConditionHealthy); h == nil || h.Status != metav1.ConditionFalse || h.Reason != health.ReasonStartFailed {
		f.T.Errorf("member %s Healthy %+v, want False/%s", failed, h, health.ReasonStartFailed)
	}
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
	if err != nil {
		f.T.Fatal(err)
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Name == failed {
			continue
		}
		if pod.UID != s.initial[pod.Name] || !framework.PodReady(pod) {
			f.T.Errorf("Pod %s touched by a halted roll: UID %s (was %s), Ready %v", pod.Name, pod.UID, s.initial[pod.Name], framework.PodReady(pod))
		}
	}
	ml, err := memberList(f.Ctx, f, name)
	if err != nil {
		f.T.Fatal(err)
	}
	if len(ml.Members) != 3 {
		f.T.Errorf("etcd lists %d members while halted, want the same 3", len(ml.Members))
	}
	return failed
}

// expireDeadline moves status.progressDeadline into the past, which makes the controller adopt
// a pending spec at its next pass (docs/lifecycle.md, "Read the conditions").
func expireDeadline(f *framework.Test, name string) {
	f.T.Helper()
	ec, err := getCluster(f.Ctx, f, name)
	if err != nil {
		f.T.Fatal(err)
	}
	before := ec.DeepCopy()
	ec.Status.ProgressDeadline = &metav1.Time{Time: time.Now().Add(-time.Hour)}
	if err := kc(f).Status().Patch(f.Ctx, ec, client.MergeFrom(before)); err != nil {
		f.T.Fatalf("moving the progress deadline of %s into the past: %v", name, err)
	}
}
