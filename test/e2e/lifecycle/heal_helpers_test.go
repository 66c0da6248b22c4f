//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdconn"
)

// What the heal scenarios (heal_*_test.go) share: the setup and end of a scenario, the wait for
// a replacement, the healed end state (which other scenarios assert too), and the choice of the
// member to damage. What they observe while the fault
// runs is in heal_observe_test.go.

// Timeouts of the heal waits. They bound how long a stuck operator can hold a test.
const (
	// healTimeout bounds fault → converged for the faults the operator acts on at once
	// (classified exits, lost Memory Pods, Pods coming back).
	healTimeout = 4 * time.Minute
	// podGoneTimeout bounds a deleted member Pod's termination (etcd exits on SIGTERM at once).
	podGoneTimeout = time.Minute
)

// healRun is one heal scenario's 3-member cluster: what held before the fault, and the traffic
// and observers that run while it heals.
type healRun struct {
	name string
	// clusterID and before (member IDs by name) are the cluster's before the fault.
	clusterID string
	before    map[string]string
	load      *healLoad
	// obs is nil in a scenario that does not observe membership.
	obs  *membershipObserver
	hist *history
}

// newHealRun creates ec, waits until it has converged at 3 members, and keeps its cluster ID and
// its membership (checkMembership).
func newHealRun(f *framework.Test, ec *etcdv1alpha2.EtcdCluster) *healRun {
	f.T.Helper()
	createCluster(f, ec)
	got := waitConverged(f, ec.Name, 3, bootstrapTimeout)
	return &healRun{name: ec.Name, clusterID: got.Status.ClusterID, before: checkMembership(f, got, 3)}
}

// start starts the write traffic (startLoad), the membership observer and the watches of the
// cluster's history.
func (r *healRun) start(f *framework.Test) *healRun {
	f.T.Helper()
	r.load = startLoad(f, r.name)
	r.obs = observeMembership(f, r.name)
	r.hist = watchHistory(f, r.name)
	return r
}

// startHeal is newHealRun and start: the setup of a scenario that replaces a member.
func startHeal(f *framework.Test, ec *etcdv1alpha2.EtcdCluster) *healRun {
	f.T.Helper()
	return newHealRun(f, ec).start(f)
}

// finishReplaced is the end of a scenario whose lost members were replaced: the membership
// observer's checks (if it ran), the history stopped and logged with the lost members'
// timelines, the healed end state (requireHealed), each lost member gone for good
// (requireLeft), and the traffic check, whose note goes with write-gap-max.
func (r *healRun) finishReplaced(f *framework.Test, note string, lost ...string) {
	f.T.Helper()
	if r.obs != nil {
		r.obs.check(f, r.clusterID)
	}
	r.hist.stop()
	r.hist.log(f, lost...)
	after := requireHealed(f, r.name, 3, r.clusterID)
	for _, m := range lost {
		requireLeft(f, m, r.before[m], after)
	}
	r.load.verify(f, note)
}

// requireReplacedFor asserts that the member was seen Healthy=False with reason and annotated
// removal-reason reason: the operator replaced it, for that cause.
func (h *history) requireReplacedFor(f *framework.Test, member, reason string) {
	f.T.Helper()
	h.requireHealthy(f, member, metav1.ConditionFalse, reason)
	h.requireRemovalReason(f, member, reason)
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
		return replacedState(ctx, f, c, name, member)
	})
	if err != nil {
		f.T.Fatal(err)
	}
}

// replacedState is one poll of waitReplaced; c is its etcd client.
func replacedState(ctx context.Context, f *framework.Test, c *clientv3.Client, name, member string) (bool, string, error) {
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
	// Only Ready Pods not being deleted are asked: the replaced member's etcd is gone and a new
	// one may not serve yet, and a call to either would block this poll for the call timeout,
	// which would then be counted in the heal time.
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
}

// requireHealed asserts the end state of every heal: converged with n voters, etcd's members =
// the EtcdMembers with their IDs, the cluster ID it had before the fault, and HashKV equal on
// every member. It returns the member IDs by name. The roll, storage and version scenarios end
// with it too.
func requireHealed(f *framework.Test, name string, n int, clusterID string) map[string]string {
	f.T.Helper()
	ec := waitConverged(f, name, n, scaleTimeout)
	ids := checkMembership(f, ec, n)
	if ec.Status.ClusterID != clusterID {
		f.T.Errorf("cluster ID %s after the heal, was %s", ec.Status.ClusterID, clusterID)
	}
	c, eps := f.DialMembers(voterSelector(name), accessOf(f, name))
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
	f.T.Helper()
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
		nodes, err := f.OperatorNodes(f.Ctx)
		if err != nil {
			f.T.Fatal(err)
		}
		for _, m := range members {
			if p, err := f.Kube.CoreV1().Pods(f.Namespace).Get(f.Ctx, m.Name, metav1.GetOptions{}); err != nil || nodes[p.Spec.NodeName] {
				avoid[m.Name] = true
			}
		}
	}
	return avoid
}

// leaderID asks a voter for etcd's leader, as a hex member ID (the form of status.memberID).
func leaderID(f *framework.Test, name string) string {
	f.T.Helper()
	return hexID(f.LeaderID(voterSelector(name)))
}

func memberNamed(ms []etcdv1alpha2.EtcdMember, name string) *etcdv1alpha2.EtcdMember {
	for i := range ms {
		if ms[i].Name == name {
			return &ms[i]
		}
	}
	return &etcdv1alpha2.EtcdMember{}
}

// memberUIDs maps the cluster's EtcdMembers to their UIDs, to tell "the same object" from
// "recreated under the same name" (framework.Test.PodUIDs and PVCUIDs do it for Pods and PVCs).
func memberUIDs(f *framework.Test, name string) map[string]types.UID {
	f.T.Helper()
	ms, err := listMembers(f.Ctx, f, name)
	if err != nil {
		f.T.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, m := range ms {
		out[m.Name] = m.UID
	}
	return out
}
