//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// refusalTimeout bounds the wait for the controller to report a refused version: one pass.
const refusalTimeout = time.Minute

// TestVersionChangeRefused checks both places that refuse a version change
// (docs/design/versions.md, "Rules"), on a converged 3-member 3.6 cluster, without any roll:
//
//   - Admission (CEL, spec against the previous spec): a minor downgrade (3.6 → 3.5) and a
//     minor skip (3.6 → 3.8) are refused with messages that name the rule and the allowed next
//     versions; the spec keeps its generation and no member Pod is touched.
//   - The controller (the spec against what the members run): CEL sees only the previous spec,
//     so steps that are each one minor can add up to a skip relative to what runs. Paused, the
//     cluster adopts 3.7 (one minor above the 3.6 its dormant member last ran; nothing runs, so
//     nothing rolls); 3.7 → 3.8 then passes CEL but skips a minor relative to 3.6. The
//     controller must refuse it: Progressing=False/VersionChangeRejected naming the rule and the
//     allowed next version, one VersionChangeRejected Warning, the latched target unchanged and
//     no member woken, even when replicas 3 is asked for in the same refused spec (a refused
//     spec is not adopted at all).
//
// The cluster was formed on 3.6, so the step to 3.7 does not wait for a snapshot under 3.6
// (status.minorSince; the wait applies to clusters that ran 3.5): 3.7.3 must be latched.
func TestVersionChangeRefused(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)
	requireOperator(f)
	const name = "verref"
	ec := newCluster(f, name, 3)
	ec.Spec.Version = "3.6.16"
	createCluster(f, ec)
	ec = waitConverged(f, name, 3, bootstrapTimeout)
	generation := ec.Generation
	pods := f.PodUIDs(podSelector(name))

	for _, tc := range []struct{ to, want string }{
		{"3.5.35", "spec.version: 3.6.16 to 3.5.35 is a minor downgrade, which etcd does not support; allowed next versions: any 3.6.x patch, or 3.7.x"},
		{"3.8.0", "spec.version: 3.6.16 to 3.8.0 skips a minor version; etcd upgrades one minor at a time, so set 3.7.x first"},
	} {
		err := trySpec(f, name, func(s *etcdv1alpha2.EtcdClusterSpec) { s.Version = tc.to })
		switch {
		case err == nil:
			t.Errorf("version 3.6.16 → %s was accepted by the API server", tc.to)
		case !strings.Contains(err.Error(), tc.want):
			t.Errorf("version 3.6.16 → %s refused with %q, want it to say %q", tc.to, err, tc.want)
		default:
			t.Logf("3.6.16 → %s refused at admission: %v", tc.to, err)
		}
	}
	ec, err := getCluster(f.Ctx, f, name)
	if err != nil {
		t.Fatal(err)
	}
	if ec.Generation != generation || ec.Spec.Version != "3.6.16" {
		t.Errorf("after refused edits: generation %d (was %d), version %s", ec.Generation, generation, ec.Spec.Version)
	}
	if now := f.PodUIDs(podSelector(name)); !maps.Equal(now, pods) {
		t.Errorf("member Pods changed after refused edits: %v, were %v", now, pods)
	}

	// The controller's check. Pause first: with no member running, a version step rolls
	// nothing, so the test needs no roll and no 3.5 data (docs/e2e-lifecycle.md, finding 9).
	setReplicas(f, name, 0)
	waitCondition(f, name, etcdv1alpha2.ConditionProgressing, metav1.ConditionFalse, membership.ReasonPaused, scaleTimeout)
	dormant := dormantMember(f, name)
	patchSpec(f, name, func(s *etcdv1alpha2.EtcdClusterSpec) { s.Version = "3.7.3" })
	err = f.Poll("3.7.3 adopted while paused", refusalTimeout, func(ctx context.Context) (bool, string, error) {
		ec, err := getCluster(ctx, f, name)
		if err != nil {
			return false, errState(ctx, err), nil
		}
		return ec.Status.Observed != nil && ec.Status.Observed.Version == "3.7.3", clusterState(ec), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ec, err = getCluster(f.Ctx, f, name)
	if err != nil {
		t.Fatal(err)
	}
	latched := ec.Status.Observed.Version
	t.Logf("paused at 3.6.16, spec 3.7.3: latched %s; %s", latched, condSummary(ec.Status.Conditions))
	warningsBefore := eventCount(f, name, membership.ReasonVersionChangeRejected)

	start := time.Now()
	patchSpec(f, name, func(s *etcdv1alpha2.EtcdClusterSpec) {
		s.Version = "3.8.0"
		s.Replicas = ptr.To[int32](3)
	})
	const wantMsg = "version 3.8.0 skips a minor: the cluster runs 3.6.16; upgrade to 3.7.x (the newest supported 3.7 is 3.7.3) first"
	err = f.Poll("Progressing=False/VersionChangeRejected for 3.8.0", refusalTimeout, func(ctx context.Context) (bool, string, error) {
		ec, err := getCluster(ctx, f, name)
		if err != nil {
			return false, errState(ctx, err), nil
		}
		p := meta.FindStatusCondition(ec.Status.Conditions, etcdv1alpha2.ConditionProgressing)
		return p != nil && p.Status == metav1.ConditionFalse && p.Reason == membership.ReasonVersionChangeRejected && strings.Contains(p.Message, "3.8.0"),
			clusterState(ec), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Record("version-refused-reported", since(start), "spec 3.8.0 on a cluster whose members last ran 3.6.16: patched → Progressing=False/VersionChangeRejected (target ≤ 1 reconcile)")
	ec, err = getCluster(f.Ctx, f, name)
	if err != nil {
		t.Fatal(err)
	}
	if p := meta.FindStatusCondition(ec.Status.Conditions, etcdv1alpha2.ConditionProgressing); p.Message != wantMsg {
		t.Errorf("Progressing message %q, want %q", p.Message, wantMsg)
	}
	if ec.Status.Observed.Version != latched || ec.Status.Observed.Replicas != 0 {
		t.Errorf("refused spec adopted: observed version %s replicas %d, want %s and 0", ec.Status.Observed.Version, ec.Status.Observed.Replicas, latched)
	}
	err = f.Poll("one VersionChangeRejected Warning for 3.8.0", refusalTimeout, func(context.Context) (bool, string, error) {
		n := eventCount(f, name, membership.ReasonVersionChangeRejected)
		return n > warningsBefore, fmt.Sprintf("%d Warnings (%d before)", n, warningsBefore), nil
	})
	if err != nil {
		t.Error(err)
	}

	// The refusal must hold: several passes later still no Pod, the dormant member asleep and
	// untouched, exactly one more Warning (one per distinct refusal).
	sleepCtx(f.Ctx, 15*time.Second)
	if n := eventCount(f, name, membership.ReasonVersionChangeRejected); n != warningsBefore+1 {
		t.Errorf("%d VersionChangeRejected Warnings after the 3.8.0 refusal, want %d (one per distinct refusal)", n, warningsBefore+1)
	}
	if now := f.PodUIDs(podSelector(name)); len(now) != 0 {
		t.Errorf("member Pods %v exist while the spec that asks for replicas 3 is refused", now)
	}
	if m := dormantMember(f, name); m.Name != dormant.Name || m.Status.MemberID != dormant.Status.MemberID || !m.Spec.Dormant {
		t.Errorf("dormant member %s (%s, dormant %v), was %s (%s)", m.Name, m.Status.MemberID, m.Spec.Dormant, dormant.Name, dormant.Status.MemberID)
	}
}

// trySpec applies mutate to the cluster's spec and returns the API server's answer.
func trySpec(f *framework.Test, name string, mutate func(*etcdv1alpha2.EtcdClusterSpec)) error {
	f.T.Helper()
	ec, err := getCluster(f.Ctx, f, name)
	if err != nil {
		f.T.Fatal(err)
	}
	before := ec.DeepCopy()
	mutate(&ec.Spec)
	return kc(f).Patch(f.Ctx, ec, client.MergeFrom(before))
}

// dormantMember waits until the paused cluster's only EtcdMember is its dormant one (the
// members removed by the pause may still be finalising) and returns it.
func dormantMember(f *framework.Test, name string) etcdv1alpha2.EtcdMember {
	f.T.Helper()
	var ms []etcdv1alpha2.EtcdMember
	err := f.Poll("one dormant EtcdMember", refusalTimeout, func(ctx context.Context) (bool, string, error) {
		var err error
		ms, err = listMembers(ctx, f, name)
		if err != nil {
			return false, errState(ctx, err), nil
		}
		return len(ms) == 1 && ms[0].Spec.Dormant, fmt.Sprintf("%d EtcdMembers", len(ms)), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	return ms[0]
}

// TestRollingUpgradeMinorVersionsMemory upgrades a 3-member Memory cluster from etcd 3.5 to 3.6
// to 3.7 under write traffic. A Memory member cannot restart without losing its data, so each
// step replaces every member by a surge (a new member with the new version added, then an old
// one removed). Checks per step: every member of the previous step replaced and gone from etcd,
// every Pod on the new image, runningVersion following; throughout, at most one learner and the
// same cluster ID; at the end HashKV equal and a linearizable history with no acknowledged write
// lost. Records roll-memory-3.6-total, roll-memory-3.7-total and write-gap-max.
func TestRollingUpgradeMinorVersionsMemory(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Upgrade)
	requireOperator(f)
	const name = "rollvermem"
	ec := newCluster(f, name, 3)
	ec.Spec.Version = "3.5.35"
	ec.Spec.Storage.Medium = etcdv1alpha2.StorageMediumMemory
	createCluster(f, ec)
	ec = waitConverged(f, name, 3, bootstrapTimeout)
	clusterID := ec.Status.ClusterID
	before := checkMembership(f, ec, 3)
	load := startLoad(f, name)
	obs := observeMembership(f, name)

	for _, v := range []string{"3.6.16", "3.7.3"} {
		minor := v[:strings.LastIndex(v, ".")]
		if v == "3.7.3" {
			// As in TestRollingUpgradeMinorVersions: etcd 3.7 cannot apply the v2 entries 3.5
			// wrote (finding 9). A new 3.7 member gets the log from a 3.6 leader, which must
			// have snapshotted and compacted past them first: 10,000 entries under 3.6. 11,500
			// also clears an operator that holds the step until every member has applied a
			// snapshot interval plus a 1,000-entry margin beyond the index where all ran 3.6,
			// so the step is adopted at once with or without that rule.
			fillLog(f, name, 11_500)
		}
		start := time.Now()
		patchSpec(f, name, func(s *etcdv1alpha2.EtcdClusterSpec) { s.Version = v })
		waitReplacedAll(f, name, before)
		ec = waitConverged(f, name, 3, rollTimeout)
		f.Record("roll-memory-"+minor+"-total", since(start), "etcd upgrade to "+v+" on 3 Memory members: spec patched → converged, each member replaced by a surge (add, then remove)")
		if ec.Status.UpdatedMembers != 3 {
			t.Errorf("%s: updatedMembers %d, want 3", v, ec.Status.UpdatedMembers)
		}
		after := requireHealed(f, name, 3, clusterID)
		for m, id := range before {
			requireLeftMemory(f, m, id, after)
		}
		before = after
		requireRunsVersion(f, name, v)
	}
	obs.check(f, clusterID)
	load.verify(f, "etcd 3.5 → 3.6 → 3.7 rolled across 3 Memory members by surge")
}

// waitReplacedAll waits until none of the members in before is left.
func waitReplacedAll(f *framework.Test, name string, before map[string]string) {
	f.T.Helper()
	err := f.Poll("every previous member replaced", rollTimeout, func(ctx context.Context) (bool, string, error) {
		ms, err := listMembers(ctx, f, name)
		if err != nil {
			return false, err.Error(), nil
		}
		var left []string
		for _, m := range ms {
			if _, ok := before[m.Name]; ok {
				left = append(left, m.Name)
			}
		}
		return len(left) == 0, fmt.Sprintf("previous members left: %v", left), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
}
