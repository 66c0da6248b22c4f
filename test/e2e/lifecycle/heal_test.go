//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdconn"
)

// Heal scenarios (issue #5): a member fails in one of the ways behaviour.md §9 and §10 list,
// under write traffic, and the cluster must heal to 3 voters with the same cluster ID, equal
// HashKV on every member and no acknowledged write lost. Each records its heal time (fault →
// converged with every voter again) in the timing report; the figures are published next to
// the §24 targets, never asserted.

// Timeouts of the heal waits. They bound how long a stuck operator can hold a test.
const (
	// healTimeout bounds fault → converged for the faults the operator acts on at once
	// (classified exits, lost Memory Pods, Pods coming back).
	healTimeout = 4 * time.Minute
	// crashLoopTimeout bounds a crash loop to its replacement: 3 restarts take about 30 s of
	// kubelet back-off (10 s, 20 s), memberFailureGrace is 3 minutes.
	crashLoopTimeout = 6 * time.Minute
	// nodeLostTimeout bounds a stopped node to the replacement of its member: NotReady after
	// ~20 s, the Pod marked for deletion after its toleration, its 30 s termination grace, the
	// operator's terminating grace, then a replacement.
	nodeLostTimeout = 8 * time.Minute
	// podGoneTimeout bounds a deleted member Pod's termination (etcd exits on SIGTERM at once).
	podGoneTimeout = time.Minute
)

// quorumLossHold is how long TestQuorumLossKeepsData keeps 2 of 3 members down. The operator
// reacts to a lost Pod in the pass the Pod's deletion triggers; a hold of several seconds lets
// every pass that event causes, and the retries of the refused Pod creates, run in the
// quorum-lost state, where any destructive step would show. Time-based rules (graces of a
// minute or more) are not exercised by it.
const quorumLossHold = 15 * time.Second

// TestMemoryMemberReplaced loses two members of a 3-member Memory cluster under write traffic,
// one after the other: the first member's Pod is deleted, then (once healed) another member's
// Pod is evicted through the Eviction API, as a drain would. A Memory member's data goes with
// its Pod, so the operator must not start it again empty: each member turns
// Healthy=False/DataLost, is annotated removal-reason=DataLost, removed from etcd and replaced
// by a new member. After each loss: converged at 3, the lost member gone from Kubernetes and
// etcd. At the end: the same cluster ID, HashKV equal, the membership observer (at most one
// learner, no duplicate, cluster ID constant), a linearizable history with 0 acknowledged
// writes lost. memory-pod-lost-heal (the key the issue #5 target, ≤ 6 s, is tracked under) and
// memory-pod-evicted-heal record fault → converged.
func TestMemoryMemberReplaced(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)
	requireOperator(f)
	const name = "memlost"
	ec := newCluster(f, name, 3)
	ec.Spec.Storage.Medium = etcdv1alpha2.StorageMediumMemory
	createCluster(f, ec)
	ec = waitConverged(f, name, 3, bootstrapTimeout)
	clusterID := ec.Status.ClusterID
	before := checkMembership(f, ec, 3)
	load := startLoad(f, name)
	obs := observeMembership(f, name)
	hist := watchHistory(f, name)

	deleted := pickMember(f, name, pickAny)
	start := time.Now()
	if err := f.DeletePod(f.Ctx, f.Namespace, deleted, nil); err != nil {
		t.Fatal(err)
	}
	waitReplaced(f, name, deleted, healTimeout)
	hist.logStatusHealed(f, "memory-pod-lost-heal", start)
	f.Record("memory-pod-lost-heal", since(start), "Memory member's Pod deleted → replaced, converged with 3 voters, under write traffic (issue #5 target ≤ 6 s)")
	hist.requireHealthy(f, deleted, metav1.ConditionFalse, health.ReasonDataLost)
	hist.requireRemovalReason(f, deleted, health.ReasonDataLost)

	// Another of the original members: the new one would also do, but an original one has
	// served the whole history.
	evicted := sortedKeys(before)[0]
	if evicted == deleted {
		evicted = sortedKeys(before)[1]
	}
	// As before the first loss: the member just added must have run for etcd's settle time,
	// or the next replacement's add waits for it (a second loss right after a replacement).
	waitSettled(f, name)
	start = evictWhenAllowed(f, evicted)
	waitReplaced(f, name, evicted, healTimeout)
	hist.logStatusHealed(f, "memory-pod-evicted-heal", start)
	f.Record("memory-pod-evicted-heal", since(start), "Memory member's Pod evicted (Eviction API) → replaced, converged with 3 voters, under write traffic")
	hist.requireHealthy(f, evicted, metav1.ConditionFalse, health.ReasonDataLost)
	hist.requireRemovalReason(f, evicted, health.ReasonDataLost)

	obs.check(f, clusterID)
	hist.stop()
	hist.log(f, deleted, evicted)
	after := requireHealed(f, name, 3, clusterID)
	for _, lost := range []string{deleted, evicted} {
		requireLeft(f, lost, before[lost], after)
	}
	load.verify(f, "Memory members lost (Pod deleted, then another evicted) and replaced")
}

// TestPVCMemberDataDirWiped empties the data directory of one member of a 3-member PVC cluster
// under write traffic and kills its etcd, which restarts on the empty directory: the data-dir
// guard refuses to start etcd each time (the member had data: guard-data-lost; etcd alone would
// panic on its lost raft log, "tocommit(N) is out of range"), and after two identical
// terminations the member is Healthy=False/DataLost and replaced (a new member with a new PVC).
// It also checks what status shows while the member is down (issue #5 acceptance): the
// EtcdCluster with readyMembers 2 and Degraded=True naming the member, the EtcdMember with
// Healthy=False/DataLost. Records pvc-wiped-heal (kill → converged; target ≤ 60 s).
func TestPVCMemberDataDirWiped(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)
	damage := f.RequireDataDirFaults()
	dataDirFault(f, "wiped", pickLastJoiner, false, health.ReasonDataLost, "pvc-wiped-heal",
		"PVC member's data dir wiped, etcd killed → DataLost after two identical exits → replaced, converged with 3 voters (target ≤ 60 s)",
		damage.WipeDataDir)
}

// TestPVCMemberDataDirWipedEarlyJoiner is TestPVCMemberDataDirWiped for the member that joined
// when the cluster had 2 members: its Pod's --initial-cluster names 2 members, so etcd alone,
// restarted on the empty data dir, would exit with "member count is unequal", which reads as
// RemovedFromCluster (docs/e2e-lifecycle.md, finding 6). The guard refuses first, so the member
// is DataLost like any wiped member. Records pvc-wiped-early-joiner-heal.
func TestPVCMemberDataDirWipedEarlyJoiner(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t)
	damage := f.RequireDataDirFaults()
	dataDirFault(f, "wiped2", pickEarlyJoiner, false, health.ReasonDataLost, "pvc-wiped-early-joiner-heal",
		"PVC member that joined a 2-member cluster: data dir wiped, etcd killed → replaced, converged with 3 voters",
		damage.WipeDataDir)
}

// TestPVCSeedLeaderDataDirWiped is TestPVCMemberDataDirWiped for the seed while it is etcd's
// leader: the two cases etcd does not notice by itself (docs/e2e-lifecycle.md, finding 5). A
// wiped leader is not told anything that trips its empty log (the new leader probes it from
// index 1), and the seed's Pod still says --initial-cluster-state=new, so etcd alone would
// rejoin under the old identity with an empty log or re-found a one-member cluster. The
// data-dir guard refuses to start etcd ("holds no write-ahead log"), two identical refusals make
// the member DataLost, and it is replaced. Records pvc-wiped-leader-heal.
func TestPVCSeedLeaderDataDirWiped(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)
	damage := f.RequireDataDirFaults()
	dataDirFault(f, "wiped-leader", pickSeed, true, health.ReasonDataLost, "pvc-wiped-leader-heal",
		"PVC seed member's data dir wiped while it led, etcd killed → the guard refuses it twice → DataLost → replaced, converged with 3 voters (target ≤ 60 s)",
		damage.WipeDataDir)
}

// TestPVCLeaderDataDirWiped is TestPVCSeedLeaderDataDirWiped for a leader that is not the seed
// (its Pod says --initial-cluster-state=existing). Records pvc-wiped-joiner-leader-heal.
func TestPVCLeaderDataDirWiped(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t)
	damage := f.RequireDataDirFaults()
	dataDirFault(f, "wiped-leader2", pickLastJoiner, true, health.ReasonDataLost, "pvc-wiped-joiner-leader-heal",
		"PVC member (not the seed) data dir wiped while it led, etcd killed → the guard refuses it → DataLost → replaced, converged with 3 voters",
		damage.WipeDataDir)
}

// TestPVCMemberDataDirCorrupted is TestPVCMemberDataDirWiped with the member's bbolt database
// overwritten instead (both meta pages): etcd refuses to open it on every start ("invalid
// database"), the member is Healthy=False/DataCorrupt after two identical exits and replaced.
// Records pvc-corrupt-heal. Not smoke: it runs the same replacement path as the wiped data dir.
func TestPVCMemberDataDirCorrupted(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t)
	damage := f.RequireDataDirFaults()
	dataDirFault(f, "corrupt", pickLastJoiner, false, health.ReasonDataCorrupt, "pvc-corrupt-heal",
		"PVC member's bbolt db corrupted, etcd killed → DataCorrupt after two identical exits → replaced, converged with 3 voters (target ≤ 60 s)",
		damage.CorruptDataDir)
}

// dataDirFault runs a data-dir scenario: a 3-member PVC cluster under traffic; one member (how)
// that is not etcd's leader (leadership is moved away if needed) has its etcd frozen (SIGSTOP,
// so that it cannot rewrite what is damaged), its data dir damaged, and the process killed; the
// member must be classified reason, replaced and the cluster converged.
func dataDirFault(f *framework.Test, name string, how pick, lead bool, reason, measure, note string, damage func(ctx context.Context, namespace, pod, mountPath string) error) {
	t := f.T
	requireOperator(f)
	signals := f.RequireContainerSignals()
	containers := f.RequireContainerFaults()
	createCluster(f, newCluster(f, name, 3))
	ec := waitConverged(f, name, 3, bootstrapTimeout)
	clusterID := ec.Status.ClusterID
	before := checkMembership(f, ec, 3)
	load := startLoad(f, name)
	obs := observeMembership(f, name)
	hist := watchHistory(f, name)
	// etcd itself notices a wiped follower (its raft log is behind what the leader committed
	// to it), but not a wiped leader: the new leader probes its log from index 1 and replicates
	// to it. Only the operator's data-dir guard catches that one (docs/e2e-lifecycle.md,
	// finding 5), so the scenarios choose explicitly.
	victim := pickMember(f, name, how)
	if lead {
		moveLeaderTo(f, name, victim)
	} else {
		moveLeaderAway(f, name, victim)
	}

	start := time.Now()
	if err := signals.SignalContainer(f.Ctx, f.Namespace, victim, desired.ContainerName, "SIGSTOP"); err != nil {
		t.Fatal(err)
	}
	if err := damage(f.Ctx, f.Namespace, victim, desired.DataMountPath); err != nil {
		t.Fatal(err)
	}
	if err := containers.KillContainer(f.Ctx, f.Namespace, victim, desired.ContainerName); err != nil {
		t.Fatal(err)
	}
	waitReplaced(f, name, victim, healTimeout)
	hist.logStatusHealed(f, measure, start)
	f.Record(measure, since(start), note)

	hist.requireHealthy(f, victim, metav1.ConditionFalse, reason)
	hist.requireRemovalReason(f, victim, reason)
	hist.requireCluster(f, "readyMembers 2 and Degraded=True naming "+victim, func(s clusterSeen) bool {
		d := meta.FindStatusCondition(s.conditions, etcdv1alpha2.ConditionDegraded)
		return s.readyMembers == 2 && d != nil && d.Status == metav1.ConditionTrue && strings.Contains(d.Message, victim)
	})
	obs.check(f, clusterID)
	hist.stop()
	hist.log(f, victim)
	after := requireHealed(f, name, 3, clusterID)
	requireLeft(f, victim, before[victim], after)
	load.verify(f, "PVC member's data dir "+name+" and the member replaced")
}

// TestQuorumLossKeepsData takes 2 of the 3 members of a PVC cluster down under write traffic
// (their Pods deleted, and kept from coming back for quorumLossHold by an admission policy that
// refuses to create Pods of those names: framework.DenyPodCreates) and checks behaviour.md §10's "quorum
// lost, data intact" row: while they are down the EtcdCluster says Available=False/QuorumLost
// and Degraded=True/QuorumLost, and nothing destructive happens (no EtcdMember deleted or
// annotated removal-reason, no PVC deleted, etcd's membership unchanged, as the watches and the
// surviving member report it). Once the Pods may be created again: converged with the same member
// names and IDs, the same PVCs, the same cluster ID, HashKV equal, no acknowledged write lost.
// Records quorum-lost-reported (Pods deleted → QuorumLost) and quorum-lost-heal (quota lifted →
// converged).
func TestQuorumLossKeepsData(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)
	requireOperator(f)
	const name = "qlost"
	createCluster(f, newCluster(f, name, 3))
	ec := waitConverged(f, name, 3, bootstrapTimeout)
	clusterID := ec.Status.ClusterID
	before := checkMembership(f, ec, 3)
	membersBefore, pvcsBefore := memberUIDs(f, name), pvcUIDs(f, name)
	load := startLoad(f, name)
	obs := observeMembership(f, name)
	hist := watchHistory(f, name)
	survivor := pickMember(f, name, pickAny)
	var down []string
	for m := range before {
		if m != survivor {
			down = append(down, m)
		}
	}
	slices.Sort(down)
	pods := podUIDs(f, name)
	lift := f.DenyPodCreates(down...)
	start := time.Now()
	for _, m := range down {
		if err := f.DeletePod(f.Ctx, f.Namespace, m, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range down {
		if err := f.WaitForPodGone(f.Ctx, f.Namespace, m, types.UID(pods[m]), podGoneTimeout); err != nil {
			t.Fatal(err)
		}
	}
	ec = waitCondition(f, name, etcdv1alpha2.ConditionAvailable, metav1.ConditionFalse, "QuorumLost", healTimeout)
	f.Record("quorum-lost-reported", since(start), "2 of 3 PVC members' Pods deleted → Available=False/QuorumLost")
	if !condIs(ec.Status.Conditions, etcdv1alpha2.ConditionDegraded, metav1.ConditionTrue, "QuorumLost") {
		t.Errorf("with quorum lost: %s, want Degraded=True/QuorumLost", clusterState(ec))
	}
	holdQuorumLost(f, name, survivor, down, before)

	lifted := time.Now()
	lift()
	waitConverged(f, name, 3, healTimeout)
	f.Record("quorum-lost-heal", since(lifted), "Pods may be created again → converged with the same 3 members (includes the operator's retry back-off for the refused creates)")
	f.Record("quorum-lost-outage", since(start), fmt.Sprintf("2 of 3 Pods deleted → converged, %s of it held down", quorumLossHold))
	obs.check(f, clusterID)
	hist.stop()
	hist.log(f, down...)
	if d := hist.destructive(); len(d) > 0 {
		t.Errorf("destructive changes while quorum was lost with the data intact (behaviour.md §10: none): %v", d)
	}
	after := requireHealed(f, name, 3, clusterID)
	if !maps.Equal(before, after) {
		t.Errorf("members after the outage %v, before %v: want the same names and IDs", after, before)
	}
	if got := memberUIDs(f, name); !maps.Equal(got, membersBefore) {
		t.Errorf("EtcdMembers after the outage %v, before %v: want the same objects", got, membersBefore)
	}
	if got := pvcUIDs(f, name); !maps.Equal(got, pvcsBefore) {
		t.Errorf("PVCs after the outage %v, before %v: want the same claims", got, pvcsBefore)
	}
	load.verify(f, "2 of 3 members down (quorum lost, data intact), then back")
}

// holdQuorumLost watches the cluster for quorumLossHold while the down members' Pods stay
// refused, and fails at once if a down member got a Pod (the hold did not hold), the cluster
// stopped saying Available=False/QuorumLost, or the survivor's member list changed.
func holdQuorumLost(f *framework.Test, name, survivor string, down []string, before map[string]string) {
	f.T.Helper()
	start := time.Now()
	samples := 0
	err := f.Poll(fmt.Sprintf("%s of quorum loss", quorumLossHold), quorumLossHold+time.Minute, func(ctx context.Context) (bool, string, error) {
		for _, m := range down {
			if _, err := f.Kube.CoreV1().Pods(f.Namespace).Get(ctx, m, metav1.GetOptions{}); err == nil {
				return false, "", fmt.Errorf("member %s has a Pod again during the hold: the admission policy did not keep it down", m)
			}
		}
		ec, err := getCluster(ctx, f, name)
		if err != nil {
			return false, errState(ctx, err), nil
		}
		if !condIs(ec.Status.Conditions, etcdv1alpha2.ConditionAvailable, metav1.ConditionFalse, "QuorumLost") {
			return false, "", fmt.Errorf("with 2 of 3 members down: %s, want Available=False/QuorumLost throughout", clusterState(ec))
		}
		if err := sameMembership(ctx, f, survivor, before); err != nil {
			return false, "", err
		}
		samples++
		return time.Since(start) >= quorumLossHold, fmt.Sprintf("%d samples", samples), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
}

// sameMembership asks the member's own etcd (serializable: it has no quorum) for the member
// list and compares it with want (names → IDs).
func sameMembership(ctx context.Context, f *framework.Test, member string, want map[string]string) error {
	pod, err := f.Kube.CoreV1().Pods(f.Namespace).Get(ctx, member, metav1.GetOptions{})
	if err != nil || pod.Status.PodIP == "" {
		return nil // a transient read; the next sample decides
	}
	ml, err := memberListAt(ctx, "http://"+pod.Status.PodIP+":2379")
	if err != nil {
		return nil
	}
	got := map[string]string{}
	for _, m := range ml.Members {
		got[peerName(firstOr(m.PeerURLs))] = hexID(m.ID)
	}
	if !maps.Equal(got, want) {
		return fmt.Errorf("etcd's member list at %s is %v, was %v: membership changed while quorum was lost", member, got, want)
	}
	return nil
}

// TestOperatorDownWhileMemoryMemberLost stops the operator (scaled to 0), then deletes a Memory
// member's Pod under write traffic: the cluster must stay writable with 2 of 3 members and no
// operator (acknowledged writes continue), nothing replaces the member meanwhile, and once the
// operator is back it replaces the member and the cluster converges (same cluster ID, HashKV
// equal, 0 acknowledged writes lost). Records heal-after-operator-return (operator scaled back
// → converged) and operator-return (scaled back → Deployment available).
//
// Not parallel: it stops the one operator every other scenario depends on.
func TestOperatorDownWhileMemoryMemberLost(t *testing.T) {
	f := framework.NewTest(t, framework.Smoke, framework.Disruptive)
	requireOperator(f)
	const name = "opdown"
	ec := newCluster(f, name, 3)
	ec.Spec.Storage.Medium = etcdv1alpha2.StorageMediumMemory
	createCluster(f, ec)
	ec = waitConverged(f, name, 3, bootstrapTimeout)
	clusterID := ec.Status.ClusterID
	before := checkMembership(f, ec, 3)
	load := startLoad(f, name)
	hist := watchHistory(f, name)

	restore := f.StopOperator()
	lost := pickMember(f, name, pickAny)
	pod, err := f.Kube.CoreV1().Pods(f.Namespace).Get(f.Ctx, lost, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.DeletePod(f.Ctx, f.Namespace, lost, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitForPodGone(f.Ctx, f.Namespace, lost, pod.UID, podGoneTimeout); err != nil {
		t.Fatal(err)
	}
	// Writable without the operator: a quorum of 2 serves.
	waitAcked(f, load.gen, load.acked()+50)
	members, err := listMembers(f.Ctx, f, name)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(members, func(m etcdv1alpha2.EtcdMember) bool { return m.Name == lost }) {
		t.Errorf("EtcdMember %s is gone while the operator is stopped: something else acted", lost)
	}

	returned := time.Now()
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	f.Record("operator-return", since(returned), "operator scaled 0 → 1 → Deployment available")
	waitReplaced(f, name, lost, healTimeout)
	hist.logStatusHealed(f, "heal-after-operator-return", returned)
	f.Record("heal-after-operator-return", since(returned), "operator scaled back while a Memory member was lost → replaced, converged with 3 voters")
	hist.requireHealthy(f, lost, metav1.ConditionFalse, health.ReasonDataLost)
	hist.requireRemovalReason(f, lost, health.ReasonDataLost)
	hist.stop()
	hist.log(f, lost)
	after := requireHealed(f, name, 3, clusterID)
	requireLeft(f, lost, before[lost], after)
	load.verify(f, "Memory member lost while the operator was stopped, replaced after it returned")
}

// TestEtcdMemberDeletionHeld runs `kubectl delete etcdmember --all` (the suite's kubectl) on a
// 3-member PVC cluster under write traffic. Nobody in the operator initiated those deletions,
// so behaviour.md §10 holds every one with the finalizer: every EtcdMember stays (being
// deleted), the cluster says Degraded=True/MemberDeletionBlocked naming all three, and nothing
// else changes: the same Pods, PVCs, member IDs and cluster ID, etcd keeps serving (writes are
// acknowledged after the deletion), HashKV equal, no acknowledged write lost; status keeps
// saying the cluster serves (Available=True, readyMembers 3). Records delete-all-members-held
// (delete → Degraded=True/MemberDeletionBlocked). What happens when the finalizers are then
// stripped is TestEtcdMembersReadopted.
func TestEtcdMemberDeletionHeld(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)
	requireOperator(f)
	const name = "delall"
	clusterID, before := deleteAllMembersHeld(f, name)
	// The traffic proves that the cluster serves: its first 50 writes must be acknowledged.
	load := startLoad(f, name)
	ec, err := getCluster(f.Ctx, f, name)
	if err != nil {
		t.Fatal(err)
	}
	// The members are still voters and Ready: a held deletion changes nothing about serving.
	if !condIs(ec.Status.Conditions, etcdv1alpha2.ConditionAvailable, metav1.ConditionTrue, "") || ec.Status.ReadyMembers != 3 {
		t.Errorf("with every EtcdMember's deletion held and etcd serving: %s; want Available=True and readyMembers 3 (behaviour.md §22: 3 Ready voters)", clusterState(ec))
	}
	ids := checkMembership(f, ec, 3)
	if !maps.Equal(ids, before) {
		t.Errorf("members %v with the deletions held, before %v", ids, before)
	}
	if ec.Status.ClusterID != clusterID {
		t.Errorf("cluster ID %s with the deletions held, was %s", ec.Status.ClusterID, clusterID)
	}
	c, eps := f.DialMembers(voterSelector(name), nil)
	t.Logf("HashKV: %s", f.RequireHashKVEqual(c, eps, time.Minute))
	load.verify(f, "every EtcdMember's deletion held by the finalizer")
}

// deleteAllMembersHeld creates a converged 3-member PVC cluster, runs `kubectl delete etcdmember
// --all` in the namespace and checks that every deletion is held: each EtcdMember still exists,
// being deleted, with the operator's finalizer; Degraded=True/MemberDeletionBlocked names them
// all; the Pods and PVCs are the same objects as before. It returns the cluster ID and the
// member IDs by name.
func deleteAllMembersHeld(f *framework.Test, name string) (string, map[string]string) {
	t := f.T
	requireOperator(f)
	createCluster(f, newCluster(f, name, 3))
	ec := waitConverged(f, name, 3, bootstrapTimeout)
	before := checkMembership(f, ec, 3)
	pods, pvcs := podUIDs(f, name), pvcUIDs(f, name)
	kubectl := kubectlPath(f)
	start := time.Now()
	out, err := exec.CommandContext(f.Ctx, kubectl, "--kubeconfig", f.Kubeconfig, "-n", f.Namespace,
		"delete", "etcdmember", "--all", "--wait=false").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl delete etcdmember --all: %v: %s", err, out)
	}
	t.Logf("kubectl delete etcdmember --all: %s", strings.TrimSpace(string(out)))
	names := sortedKeys(before)
	err = f.Poll("every deletion held, Degraded=True/MemberDeletionBlocked", healTimeout, func(ctx context.Context) (bool, string, error) {
		ms, err := listMembers(ctx, f, name)
		if err != nil {
			return false, errState(ctx, err), nil
		}
		held := 0
		for _, m := range ms {
			if m.DeletionTimestamp != nil && slices.Contains(m.Finalizers, etcdv1alpha2.FinalizerMemberCleanup) {
				held++
			}
		}
		got, err := getCluster(ctx, f, name)
		if err != nil {
			return false, errState(ctx, err), nil
		}
		d := meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha2.ConditionDegraded)
		named := d != nil && d.Status == metav1.ConditionTrue && d.Reason == "MemberDeletionBlocked" && containsAll(d.Message, names)
		return len(ms) == 3 && held == 3 && named, fmt.Sprintf("%d EtcdMembers, %d held; %s", len(ms), held, clusterState(got)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Record("delete-all-members-held", since(start), "kubectl delete etcdmember --all → every deletion held, Degraded=True/MemberDeletionBlocked")
	if got := podUIDs(f, name); !maps.Equal(got, pods) {
		t.Errorf("member Pods %v after the held deletions, before %v: want them untouched", got, pods)
	}
	if got := pvcUIDs(f, name); !maps.Equal(got, pvcs) {
		t.Errorf("PVCs %v after the held deletions, before %v: want them untouched", got, pvcs)
	}
	return ec.Status.ClusterID, before
}

// TestEtcdMembersReadopted continues TestEtcdMemberDeletionHeld: the held deletions are let go
// by stripping the finalizers, so every EtcdMember disappears (and the garbage collector takes
// their Pods) while their PVCs remain. behaviour.md §10: the operator re-adopts every orphan PVC
// under its old member name, and the cluster comes back with the same member IDs, the same
// cluster ID and its data (traffic: 0 acknowledged writes lost; HashKV equal). Records
// readoption-heal (finalizers stripped → converged).
// Not smoke: TestEtcdMemberDeletionHeld covers the held deletion; this one is the total outage
// that follows, in the full set.
func TestEtcdMembersReadopted(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Disruptive)
	const name = "readopt"
	clusterID, before := deleteAllMembersHeld(f, name)
	oldUIDs := memberUIDs(f, name)
	pvcs := pvcUIDs(f, name)
	load := startLoad(f, name)
	start := time.Now()
	for m := range before {
		em := &etcdv1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: m, Namespace: f.Namespace}}
		if err := kc(f).Patch(f.Ctx, em, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("stripping the finalizer of %s: %v", m, err)
		}
	}
	err := f.Poll("every EtcdMember re-adopted under its old name", healTimeout, func(ctx context.Context) (bool, string, error) {
		ms, err := listMembers(ctx, f, name)
		if err != nil {
			return false, errState(ctx, err), nil
		}
		var state []string
		readopted := 0
		for _, m := range ms {
			if _, ok := before[m.Name]; ok && string(m.UID) != oldUIDs[m.Name] && m.DeletionTimestamp == nil {
				readopted++
			}
			state = append(state, m.Name)
		}
		return readopted == len(before) && len(ms) == len(before), fmt.Sprintf("EtcdMembers %v, %d re-adopted", state, readopted), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitConverged(f, name, 3, healTimeout)
	f.Record("readoption-heal", since(start), "every EtcdMember gone (finalizers stripped), PVCs kept → re-adopted under the old names and IDs, converged")
	after := requireHealed(f, name, 3, clusterID)
	if !maps.Equal(after, before) {
		t.Errorf("members after re-adoption %v, before %v: want the same names and IDs", after, before)
	}
	if got := pvcUIDs(f, name); !maps.Equal(got, pvcs) {
		t.Errorf("PVCs %v after re-adoption, before %v: want the same claims", got, pvcs)
	}
	load.verify(f, "every EtcdMember deleted (finalizers stripped) and re-adopted from its PVC")
}

// TestCrashLoopMemberReplaced kills one PVC member's etcd container every time it starts, under
// write traffic: an unclassified crash loop (SIGKILL leaves no fatal pattern). After ≥ 3
// restarts within 10 minutes (or memberFailureGrace not Ready) the member is
// Healthy=False/CrashLoop and replaced (behaviour.md §9). Records crashloop-heal (first kill →
// converged; target: replacement started ≤ 4 min).
// Not smoke: the kubelet's back-off alone makes it a minute long.
func TestCrashLoopMemberReplaced(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t)
	requireOperator(f)
	containers := f.RequireContainerFaults()
	const name = "crashloop"
	createCluster(f, newCluster(f, name, 3))
	ec := waitConverged(f, name, 3, bootstrapTimeout)
	clusterID := ec.Status.ClusterID
	before := checkMembership(f, ec, 3)
	load := startLoad(f, name)
	obs := observeMembership(f, name)
	hist := watchHistory(f, name)
	victim := pickMember(f, name, pickFollower)
	start := time.Now()
	kills := killOnEveryStart(f, containers, victim, crashLoopTimeout)
	waitReplaced(f, name, victim, crashLoopTimeout)
	hist.logStatusHealed(f, "crashloop-heal", start)
	f.Record("crashloop-heal", since(start), fmt.Sprintf("etcd killed on every start (%d kills) → Healthy=False/CrashLoop → replaced, converged with 3 voters (target: replacement started ≤ 4 min)", kills))
	hist.requireHealthy(f, victim, metav1.ConditionFalse, health.ReasonCrashLoop)
	hist.requireRemovalReason(f, victim, health.ReasonCrashLoop)
	obs.check(f, clusterID)
	hist.stop()
	hist.log(f, victim)
	after := requireHealed(f, name, 3, clusterID)
	requireLeft(f, victim, before[victim], after)
	load.verify(f, "crash-looping member replaced")
}

// crashLoopPoll is how often killOnEveryStart looks for a restarted container: well below the
// ~2 s a restarted etcd needs to pass its startup and readiness probes, so the member is killed
// before it is Ready again, as a process that crashes on start would be.
const crashLoopPoll = 100 * time.Millisecond

// killOnEveryStart kills the member's etcd container each time it runs again, until the operator
// marks the member for removal (removal-reason) or it is gone, and returns how many kills it
// took.
func killOnEveryStart(f *framework.Test, containers framework.ContainerFaults, member string, timeout time.Duration) int {
	f.T.Helper()
	kills := 0
	lastKilled := ""
	err := framework.Poll(f.Ctx, member+" crash-looping until marked for replacement", timeout, crashLoopPoll, func(ctx context.Context) (bool, string, error) {
		m := &etcdv1alpha2.EtcdMember{}
		err := kc(f).Get(ctx, types.NamespacedName{Namespace: f.Namespace, Name: member}, m)
		switch {
		case apierrors.IsNotFound(err):
			return true, "", nil
		case err != nil:
			return false, errState(ctx, err), nil
		case m.Annotations[etcdv1alpha2.AnnotationRemovalReason] != "" || m.DeletionTimestamp != nil:
			return true, "", nil
		}
		pod, err := f.Kube.CoreV1().Pods(f.Namespace).Get(ctx, member, metav1.GetOptions{})
		if err != nil {
			return false, errState(ctx, err), nil
		}
		for _, st := range pod.Status.ContainerStatuses {
			if st.Name != desired.ContainerName || st.State.Running == nil || st.ContainerID == lastKilled {
				continue
			}
			if err := containers.KillContainer(ctx, f.Namespace, member, desired.ContainerName); err != nil {
				return false, errState(ctx, err), nil
			}
			lastKilled = st.ContainerID
			kills++
		}
		return false, fmt.Sprintf("%d kills; member Healthy %v", kills, meta.FindStatusCondition(m.Status.Conditions, etcdv1alpha2.ConditionHealthy)), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	return kills
}

// TestNodeLostMemberReplaced stops the node of one member of a 3-member PVC cluster (its kubelet
// and container runtime, as a lost machine) under write traffic. The Pod is marked for deletion
// by the taint manager once the node is NotReady (the cluster tolerates not-ready/unreachable
// for 5 s only, so the test does not wait Kubernetes' default 300 s) and stays Terminating;
// after the operator's terminating grace the member is Healthy=False/NodeLost and replaced under
// a new identity, never force-deleted (behaviour.md §9). When the node returns, the old identity
// cannot rejoin: etcd never lists its ID again, and its old Pod, if it runs, is not a member.
// Records node-lost-heal (node stopped → converged; target: replacement started ≤ 6 min).
//
// It shortens the operator's graces through their flags' environment variables (the operator
// restarts twice: with them and without them). Not smoke, not parallel: a stopped node stops
// every other scenario's members on it, and the operator's restarts would disturb them too.
func TestNodeLostMemberReplaced(t *testing.T) {
	f := framework.NewTest(t, framework.Disruptive)
	requireOperator(f)
	nodes := f.RequireNodeFaults()
	setOperatorEnv(f, map[string]string{
		"ETCD_OPERATOR_TERMINATING_GRACE":    "20s",
		"ETCD_OPERATOR_NODE_LOST_GRACE":      "20s",
		"ETCD_OPERATOR_MEMBER_FAILURE_GRACE": "60s",
	})
	const name = "nodelost"
	ec := newCluster(f, name, 3)
	for _, taint := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		ec.Spec.Tolerations = append(ec.Spec.Tolerations, corev1.Toleration{
			Key: taint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5),
		})
	}
	createCluster(f, ec)
	ec = waitConverged(f, name, 3, bootstrapTimeout)
	clusterID := ec.Status.ClusterID
	before := checkMembership(f, ec, 3)
	load := startLoad(f, name)
	obs := observeMembership(f, name)
	hist := watchHistory(f, name)
	victim := pickMember(f, name, pickAwayFromOperator)
	pod, err := f.Kube.CoreV1().Pods(f.Namespace).Get(f.Ctx, victim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node := pod.Spec.NodeName

	start := time.Now()
	restart := stopNode(f, nodes, node)
	waitReplaced(f, name, victim, nodeLostTimeout)
	hist.logStatusHealed(f, "node-lost-heal", start)
	f.Record("node-lost-heal", since(start), "node stopped → its member NodeLost after the shortened graces (terminating 20 s) → replaced, 3 voters Ready, Available=True/QuorumHealthy (target: replacement started ≤ 6 min with default graces)")
	hist.requireHealthy(f, victim, metav1.ConditionFalse, health.ReasonNodeLost)
	hist.requireRemovalReason(f, victim, health.ReasonNodeLost)

	restart()
	oldIdentityStaysOut(f, name, victim, before[victim], pod.UID)
	obs.check(f, clusterID)
	hist.stop()
	hist.log(f, victim)
	after := requireHealed(f, name, 3, clusterID)
	requireLeft(f, victim, before[victim], after)
	load.verify(f, "node of one member stopped, member replaced, node back")
}

// waitReplaced waits for the end of a heal: the member's EtcdMember is gone, the cluster has 3
// EtcdMembers and says readyMembers 3, Available=True/QuorumHealthy and Progressing=False for
// its generation, etcd lists 3 started voters and no learner, and 3 voter Pods that are not
// being deleted are Ready. The replaced member's own Pod may still be terminating (for a lost
// node, until the node returns: it is never force-deleted); requireHealed then waits for it too
// (waitConverged), so the heal time measures the cluster, not the kubelet's cleanup.
func waitReplaced(f *framework.Test, name, member string, timeout time.Duration) {
	f.T.Helper()
	// One etcd client for the whole wait, its endpoints set to the Ready voters at each poll: a
	// client dialled afresh per poll took up to 2 s to connect to a member that had just
	// started, and the heal time would include it.
	eps, err := f.MemberEndpoints(f.Ctx, f.Namespace, voterSelector(name), false)
	if err != nil {
		f.T.Fatal(err)
	}
	c, err := etcdconn.New(f.Ctx, etcdconn.Options{Endpoints: eps})
	if err != nil {
		f.T.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	err = f.Poll(member+" replaced, 3 voters", timeout, func(ctx context.Context) (bool, string, error) {
		ms, err := listMembers(ctx, f, name)
		if err != nil {
			return false, errState(ctx, err), nil
		}
		if slices.ContainsFunc(ms, func(m etcdv1alpha2.EtcdMember) bool { return m.Name == member }) {
			h := meta.FindStatusCondition(memberNamed(ms, member).Status.Conditions, etcdv1alpha2.ConditionHealthy)
			return false, fmt.Sprintf("%s is still an EtcdMember (Healthy %v)", member, h), nil
		}
		ec, err := getCluster(ctx, f, name)
		if err != nil {
			return false, errState(ctx, err), nil
		}
		state := clusterState(ec)
		if len(ms) != 3 || ec.Status.ReadyMembers != 3 || ec.Status.ObservedGeneration != ec.Generation ||
			!condIs(ec.Status.Conditions, etcdv1alpha2.ConditionAvailable, metav1.ConditionTrue, "QuorumHealthy") ||
			!condIs(ec.Status.Conditions, etcdv1alpha2.ConditionProgressing, metav1.ConditionFalse, "") {
			return false, fmt.Sprintf("%d EtcdMembers; %s", len(ms), state), nil
		}
		pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: voterSelector(name)})
		if err != nil {
			return false, errState(ctx, err), nil
		}
		var ready []corev1.Pod
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && framework.PodReady(&p) {
				ready = append(ready, p)
			}
		}
		// Only Ready Pods not being deleted are asked: the replaced member's etcd is gone and
		// a new one may not serve yet, and a call to either would block this poll for the call
		// timeout, which would then be counted in the heal time.
		readyEps, _ := etcdconn.PodEndpoints(ready, etcdconn.ClientPort, false)
		if len(readyEps) == 0 {
			return false, state + "; no Ready voter Pod", nil
		}
		c.SetEndpoints(readyEps...)
		cctx, cancel := context.WithTimeout(ctx, etcdCallTimeout)
		defer cancel()
		ml, err := c.MemberList(cctx, clientv3.WithSerializable())
		if err != nil {
			return false, fmt.Sprintf("%s; MemberList: %v", state, err), nil
		}
		voters, learners, unstarted := countMembers(ml)
		return voters == 3 && learners == 0 && unstarted == 0 && len(ready) == 3,
			fmt.Sprintf("%s; etcd: %d voters, %d learners, %d unstarted; %d voter Pods Ready", state, voters, learners, unstarted, len(ready)), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
}

// stopNode stops the node and returns the function that starts it again and waits for it to
// be Ready; a cleanup calls it too, so the node is never left stopped.
func stopNode(f *framework.Test, nodes framework.NodeFaults, node string) (restart func()) {
	f.T.Helper()
	if err := nodes.StopNode(f.Ctx, node); err != nil {
		f.T.Fatal(err)
	}
	started := false
	restart = func() {
		if started {
			return
		}
		started = true
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := nodes.StartNode(ctx, node); err != nil {
			f.T.Errorf("starting node %s again: %v", node, err)
			return
		}
		err := framework.Poll(ctx, "node "+node+" Ready", 2*time.Minute, framework.DefaultPollInterval, func(ctx context.Context) (bool, string, error) {
			n, err := f.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return false, errState(ctx, err), nil
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					return c.Status == corev1.ConditionTrue, string(c.Status), nil
				}
			}
			return false, "no Ready condition", nil
		})
		if err != nil {
			f.T.Error(err)
		}
	}
	f.T.Cleanup(restart)
	return restart
}

// oldIdentityStaysOut waits, after the lost node came back, until the replaced member's old Pod
// is gone (the kubelet finishes the deletion it was asked for), checking meanwhile that etcd
// never lists the old member ID again.
func oldIdentityStaysOut(f *framework.Test, name, member, oldID string, oldPod types.UID) {
	f.T.Helper()
	err := f.Poll("old Pod of "+member+" gone, its ID never back in etcd", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		if ml, err := memberList(ctx, f, name); err == nil {
			for _, m := range ml.Members {
				if hexID(m.ID) == oldID {
					return false, "", fmt.Errorf("etcd lists the replaced member %s (%s) again after its node returned", member, oldID)
				}
			}
		}
		p, err := f.Kube.CoreV1().Pods(f.Namespace).Get(ctx, member, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return true, "", nil
		case err != nil:
			return false, errState(ctx, err), nil
		case p.UID != oldPod:
			return false, "", fmt.Errorf("a new Pod %s (uid %s) runs under the replaced member's name", member, p.UID)
		}
		return false, fmt.Sprintf("old Pod phase %s, deletionTimestamp %v", p.Status.Phase, p.DeletionTimestamp), nil
	})
	if err != nil {
		f.T.Error(err)
	}
}

// setOperatorEnv sets environment variables on the operator's container (each flag has one:
// ETCD_OPERATOR_<FLAG>, see internal/operator), waits for the rollout, and registers a cleanup
// that removes them again and waits for the operator to be available.
func setOperatorEnv(f *framework.Test, env map[string]string) {
	f.T.Helper()
	d, err := f.OperatorDeployment(f.Ctx)
	if err != nil {
		f.T.Fatal(err)
	}
	container := d.Spec.Template.Spec.Containers[0].Name
	var set, unset []string
	for _, k := range sortedKeys(env) {
		set = append(set, fmt.Sprintf(`{"name":%q,"value":%q}`, k, env[k]))
		unset = append(unset, fmt.Sprintf(`{"name":%q,"$patch":"delete"}`, k))
	}
	patch := func(vars []string) string {
		return fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":%q,"env":[%s]}]}}}}`, container, strings.Join(vars, ","))
	}
	f.T.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := patchOperator(ctx, f, d.Name, patch(unset)); err != nil {
			f.T.Errorf("removing %v from the operator: %v", sortedKeys(env), err)
			return
		}
		if err := waitOperatorRolled(ctx, f, d.Name); err != nil {
			f.T.Errorf("operator after removing %v: %v", sortedKeys(env), err)
		}
	})
	if err := patchOperator(f.Ctx, f, d.Name, patch(set)); err != nil {
		f.T.Fatal(err)
	}
	if err := waitOperatorRolled(f.Ctx, f, d.Name); err != nil {
		f.T.Fatal(err)
	}
}

// pick says which member a scenario may damage.
type pick int

const (
	// pickAny takes the first member by name.
	pickAny pick = iota
	// pickFollower takes a member that is neither the seed (spec.bootstrap) nor etcd's leader.
	pickFollower
	// pickAwayFromOperator takes a member whose node does not run the operator, so that
	// stopping the node does not also stop the operator.
	pickAwayFromOperator
	// pickLastJoiner takes a member that is not the seed and whose spec.initialCluster (its
	// Pod's --initial-cluster) names every member of the cluster.
	pickLastJoiner
	// pickEarlyJoiner takes a member that is not the seed and whose spec.initialCluster names
	// fewer members than the cluster has now.
	pickEarlyJoiner
	// pickSeed takes the seed (spec.bootstrap), whose Pod says --initial-cluster-state=new.
	pickSeed
)

// pickMember chooses a member of the cluster per how, by name order among the candidates.
func pickMember(f *framework.Test, name string, how pick) string {
	f.T.Helper()
	members, err := listMembers(f.Ctx, f, name)
	if err != nil || len(members) == 0 {
		f.T.Fatalf("members of %s: %d, %v", name, len(members), err)
	}
	avoid := avoided(f, name, members, how)
	for _, m := range members {
		if !avoid[m.Name] {
			return m.Name
		}
	}
	f.T.Fatalf("no member of %s fits (%d members, avoided %v)", name, len(members), sortedKeys(avoid))
	return ""
}

// avoided are the members how rules out.
func avoided(f *framework.Test, name string, members []etcdv1alpha2.EtcdMember, how pick) map[string]bool {
	avoid := map[string]bool{}
	switch how {
	case pickFollower:
		leader := leaderID(f, name)
		for _, m := range members {
			if m.Spec.Bootstrap || m.Status.MemberID == leader {
				avoid[m.Name] = true
			}
		}
	case pickLastJoiner, pickEarlyJoiner:
		for _, m := range members {
			all := true
			for _, other := range members {
				all = all && strings.Contains(m.Spec.InitialCluster, other.Name+"=")
			}
			if m.Spec.Bootstrap || all != (how == pickLastJoiner) {
				avoid[m.Name] = true
			}
		}
	case pickSeed:
		for _, m := range members {
			if !m.Spec.Bootstrap {
				avoid[m.Name] = true
			}
		}
	case pickAwayFromOperator:
		nodes := operatorNodes(f)
		for _, m := range members {
			if p, err := f.Kube.CoreV1().Pods(f.Namespace).Get(f.Ctx, m.Name, metav1.GetOptions{}); err != nil || nodes[p.Spec.NodeName] {
				avoid[m.Name] = true
			}
		}
	}
	return avoid
}

// leaderID asks a voter for etcd's leader, as a hex member ID.
func leaderID(f *framework.Test, name string) string {
	f.T.Helper()
	c, eps := f.DialMembers(voterSelector(name), nil)
	ctx, cancel := context.WithTimeout(f.Ctx, etcdCallTimeout)
	defer cancel()
	st, err := c.Status(ctx, eps[0])
	if err != nil {
		f.T.Fatalf("etcd Status at %s: %v", eps[0], err)
	}
	return hexID(st.Leader)
}

// moveLeaderAway moves etcd's leadership off member (to another member, the seed if it can),
// and waits until a voter reports another leader; nothing happens when member does not lead.
func moveLeaderAway(f *framework.Test, name, member string) {
	f.T.Helper()
	leader := leaderID(f, name)
	members, err := listMembers(f.Ctx, f, name)
	if err != nil {
		f.T.Fatal(err)
	}
	var target uint64
	for _, m := range members {
		if m.Name == member && m.Status.MemberID != leader {
			return
		}
		if id, err := strconv.ParseUint(m.Status.MemberID, 16, 64); err == nil && m.Name != member && (target == 0 || m.Spec.Bootstrap) {
			target = id
		}
	}
	ep, err := f.MemberEndpoints(f.Ctx, f.Namespace, etcdv1alpha2.LabelCluster+"="+name+",app.kubernetes.io/component="+member, false)
	if err != nil {
		f.T.Fatal(err)
	}
	c, err := etcdconn.New(f.Ctx, etcdconn.Options{Endpoints: ep})
	if err != nil {
		f.T.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(f.Ctx, scaleTimeout)
	defer cancel()
	if _, err := c.MoveLeader(ctx, target); err != nil {
		f.T.Fatalf("moving etcd's leadership from %s to %s: %v", member, hexID(target), err)
	}
	// MoveLeader returns once the transferee leads; the voter asked next may learn it a
	// heartbeat later.
	err = f.Poll("a leader other than "+member, 10*time.Second, func(ctx context.Context) (bool, string, error) {
		st, err := c.Status(ctx, ep[0])
		if err != nil {
			return false, errState(ctx, err), nil
		}
		return hexID(st.Leader) != leader, "leader " + hexID(st.Leader), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	f.T.Logf("moved etcd's leadership from %s (%s) to %s", member, leader, hexID(target))
}

// moveLeaderTo makes member etcd's leader, asking the current leader to hand over, and waits
// until the member itself reports it leads.
func moveLeaderTo(f *framework.Test, name, member string) {
	f.T.Helper()
	leader := leaderID(f, name)
	members, err := listMembers(f.Ctx, f, name)
	if err != nil {
		f.T.Fatal(err)
	}
	var target uint64
	current := ""
	for _, m := range members {
		if m.Status.MemberID == leader {
			current = m.Name
		}
		if m.Name == member {
			if target, err = strconv.ParseUint(m.Status.MemberID, 16, 64); err != nil {
				f.T.Fatalf("member %s has no member ID yet: %q", member, m.Status.MemberID)
			}
		}
	}
	if current == member {
		return
	}
	if current == "" {
		f.T.Fatalf("etcd's leader %s is none of %s's members", leader, name)
	}
	endpoints := func(m string) []string {
		ep, err := f.MemberEndpoints(f.Ctx, f.Namespace, etcdv1alpha2.LabelCluster+"="+name+",app.kubernetes.io/component="+m, false)
		if err != nil {
			f.T.Fatal(err)
		}
		return ep
	}
	c, err := etcdconn.New(f.Ctx, etcdconn.Options{Endpoints: endpoints(current)})
	if err != nil {
		f.T.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(f.Ctx, scaleTimeout)
	defer cancel()
	if _, err := c.MoveLeader(ctx, target); err != nil {
		f.T.Fatalf("moving etcd's leadership from %s to %s: %v", current, member, err)
	}
	own := endpoints(member)[0]
	err = f.Poll(member+" leading", 10*time.Second, func(ctx context.Context) (bool, string, error) {
		st, err := c.Status(ctx, own)
		if err != nil {
			return false, errState(ctx, err), nil
		}
		return st.Leader == target, "leader " + hexID(st.Leader), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	f.T.Logf("moved etcd's leadership from %s (%s) to %s", current, leader, member)
}

// operatorNodes are the nodes the operator's Pods run on.
func operatorNodes(f *framework.Test) map[string]bool {
	f.T.Helper()
	pods, err := f.Kube.CoreV1().Pods(framework.OperatorNamespace).List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range pods.Items {
		out[p.Spec.NodeName] = true
	}
	return out
}

// evictWhenAllowed evicts the Pod through the Eviction API, retrying while the PDB refuses
// (429: a member that just joined is not counted healthy yet), and returns when the eviction was
// accepted.
func evictWhenAllowed(f *framework.Test, pod string) time.Time {
	f.T.Helper()
	var at time.Time
	err := f.Poll("eviction of "+pod+" allowed by the PDB", healTimeout, func(ctx context.Context) (bool, string, error) {
		err := f.EvictPod(ctx, f.Namespace, pod)
		switch {
		case err == nil:
			at = time.Now()
			return true, "", nil
		case apierrors.IsTooManyRequests(err):
			return false, errState(ctx, err), nil
		}
		return false, "", err
	})
	if err != nil {
		f.T.Fatal(err)
	}
	return at
}

func memberNamed(ms []etcdv1alpha2.EtcdMember, name string) *etcdv1alpha2.EtcdMember {
	for i := range ms {
		if ms[i].Name == name {
			return &ms[i]
		}
	}
	return &etcdv1alpha2.EtcdMember{}
}

// requireHealed asserts the end state of every heal: converged with n voters, etcd's members =
// the EtcdMembers with their IDs, the cluster ID it had before the fault, and HashKV equal on
// every member. It returns the member IDs by name.
func requireHealed(f *framework.Test, name string, n int, clusterID string) map[string]string {
	f.T.Helper()
	ec := waitConverged(f, name, n, scaleTimeout)
	ids := checkMembership(f, ec, n)
	if ec.Status.ClusterID != clusterID {
		f.T.Errorf("cluster ID %s after the heal, was %s", ec.Status.ClusterID, clusterID)
	}
	c, eps := f.DialMembers(voterSelector(name), nil)
	f.T.Logf("healed: members %v; HashKV %s", ids, f.RequireHashKVEqual(c, eps, time.Minute))
	return ids
}

// requireLeft asserts that a replaced member left for good: neither its name nor its old ID is
// among the members after the heal, and its PVC (if it had one) is deleted.
func requireLeft(f *framework.Test, member, oldID string, after map[string]string) {
	f.T.Helper()
	for n, id := range after {
		if n == member || id == oldID {
			f.T.Errorf("replaced member %s (%s) is still in etcd as %s (%s)", member, oldID, n, id)
		}
	}
	err := f.Poll("PVC "+desired.PVCName(member)+" gone", goneTimeout, func(ctx context.Context) (bool, string, error) {
		pvc, err := f.Kube.CoreV1().PersistentVolumeClaims(f.Namespace).Get(ctx, desired.PVCName(member), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, errState(ctx, err), nil
		}
		return false, fmt.Sprintf("phase %s, deletionTimestamp %v", pvc.Status.Phase, pvc.DeletionTimestamp), nil
	})
	if err != nil {
		f.T.Error(err)
	}
}

// memberUIDs, podUIDs and pvcUIDs map the cluster's EtcdMembers, member Pods and data PVCs to
// their UIDs, to tell "the same object" from "recreated under the same name".
func memberUIDs(f *framework.Test, name string) map[string]string {
	f.T.Helper()
	ms, err := listMembers(f.Ctx, f, name)
	if err != nil {
		f.T.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range ms {
		out[m.Name] = string(m.UID)
	}
	return out
}

func podUIDs(f *framework.Test, name string) map[string]string {
	f.T.Helper()
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
	if err != nil {
		f.T.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		out[p.Name] = string(p.UID)
	}
	return out
}

func pvcUIDs(f *framework.Test, name string) map[string]string {
	f.T.Helper()
	pvcs, err := f.Kube.CoreV1().PersistentVolumeClaims(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
	if err != nil {
		f.T.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pvcs.Items {
		out[p.Name] = string(p.UID)
	}
	return out
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
