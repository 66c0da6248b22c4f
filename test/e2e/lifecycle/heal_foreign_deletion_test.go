//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestEtcdMemberDeletionHeld runs `kubectl delete etcdmember --all` (the suite's kubectl) on a
// 3-member PVC cluster under write traffic. Nobody in the operator initiated those deletions,
// so docs/design/healing.md, "Foreign deletions", holds every one with the finalizer: every
// EtcdMember stays (being deleted), the cluster says Degraded=True/MemberDeletionBlocked naming
// all three, and nothing else changes: the same Pods, PVCs, member IDs and cluster ID, etcd
// keeps serving (writes are acknowledged after the deletion), HashKV equal, no acknowledged
// write lost; status keeps saying the cluster serves (Available=True, readyMembers 3). Records
// delete-all-members-held (delete → Degraded=True/MemberDeletionBlocked). What happens when the
// finalizers are then stripped is TestEtcdMembersReadopted.
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
		t.Errorf("with every EtcdMember's deletion held and etcd serving: %s; want Available=True and readyMembers 3 (docs/design/conditions-and-events.md, \"Available\": 3 Ready voters)", clusterState(ec))
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
// --all` in the namespace, which the default install's deletion guard refuses, then again under
// an identity the guard admits, and checks that every deletion is held: each EtcdMember still exists,
// being deleted, with the operator's finalizer; Degraded=True/MemberDeletionBlocked names them
// all; the Pods and PVCs are the same objects as before. It returns the cluster ID and the
// member IDs by name.
func deleteAllMembersHeld(f *framework.Test, name string) (string, map[string]string) {
	t := f.T
	requireOperator(f)
	createCluster(f, newCluster(f, name, 3))
	ec := waitConverged(f, name, 3, bootstrapTimeout)
	before := checkMembership(f, ec, 3)
	pods, pvcs := f.PodUIDs(podSelector(name)), f.PVCUIDs(podSelector(name))
	kubectl := kubectlPath(f)
	// The default install refuses the deletion at admission (config/admission), naming the
	// break-glass annotation; nothing is deleted.
	out, err := exec.CommandContext(f.Ctx, kubectl, "--kubeconfig", f.Kubeconfig, "-n", f.Namespace,
		"delete", "etcdmember", "--all", "--wait=false").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is managed by etcd-operator") || !strings.Contains(string(out), etcdv1alpha2.AnnotationAllowDeletion+"=true") {
		t.Fatalf("kubectl delete etcdmember --all: %v: %s; want the deletion guard's refusal naming the allow-deletion annotation", err, out)
	}
	t.Logf("kubectl delete etcdmember --all, refused: %s", strings.TrimSpace(string(out)))
	if ms, err := listMembers(f.Ctx, f, name); err != nil || slices.ContainsFunc(ms, func(m etcdv1alpha2.EtcdMember) bool { return m.DeletionTimestamp != nil }) {
		t.Fatalf("after the refused deletion: %d EtcdMembers, some being deleted, or %v", len(ms), err)
	}
	// A deletion the guard lets through (here under the garbage collector's identity, which it
	// must admit for a cluster's own deletion) meets the operator's finalizer: defence in depth.
	start := time.Now()
	out, err = exec.CommandContext(f.Ctx, kubectl, "--kubeconfig", f.Kubeconfig, "-n", f.Namespace,
		"--as", "system:serviceaccount:kube-system:generic-garbage-collector",
		"delete", "etcdmember", "--all", "--wait=false").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl delete etcdmember --all as the garbage collector: %v: %s", err, out)
	}
	t.Logf("kubectl delete etcdmember --all as the garbage collector: %s", strings.TrimSpace(string(out)))
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
	if got := f.PodUIDs(podSelector(name)); !maps.Equal(got, pods) {
		t.Errorf("member Pods %v after the held deletions, before %v: want them untouched", got, pods)
	}
	if got := f.PVCUIDs(podSelector(name)); !maps.Equal(got, pvcs) {
		t.Errorf("PVCs %v after the held deletions, before %v: want them untouched", got, pvcs)
	}
	return ec.Status.ClusterID, before
}

// TestEtcdMembersReadopted continues TestEtcdMemberDeletionHeld: the held deletions are let go
// by stripping the finalizers, so every EtcdMember disappears (and the garbage collector takes
// their Pods) while their PVCs remain. docs/design/membership-flows.md, "Re-adoption of orphan
// PVCs": the operator re-adopts every orphan PVC under its old member name, and the cluster
// comes back with the same member IDs, the same cluster ID and its data (traffic: 0
// acknowledged writes lost; HashKV equal). Records readoption-heal (finalizers stripped →
// converged).
// Not smoke: TestEtcdMemberDeletionHeld covers the held deletion; this one is the total outage
// that follows, in the full set.
func TestEtcdMembersReadopted(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Disruptive)
	const name = "readopt"
	clusterID, before := deleteAllMembersHeld(f, name)
	oldUIDs := memberUIDs(f, name)
	pvcs := f.PVCUIDs(podSelector(name))
	load := startLoad(f, name)
	start := time.Now()
	for m := range before {
		em := &etcdv1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: m, Namespace: f.Namespace}}
		if err := kc(f).Patch(f.Ctx, em, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("stripping the finalizer of %s: %v", m, err)
		}
	}
	waitReadopted(f, name, before, oldUIDs)
	waitConverged(f, name, 3, healTimeout)
	f.Record("readoption-heal", since(start), "every EtcdMember gone (finalizers stripped), PVCs kept → re-adopted under the old names and IDs, converged")
	after := requireHealed(f, name, 3, clusterID)
	if !maps.Equal(after, before) {
		t.Errorf("members after re-adoption %v, before %v: want the same names and IDs", after, before)
	}
	if got := f.PVCUIDs(podSelector(name)); !maps.Equal(got, pvcs) {
		t.Errorf("PVCs %v after re-adoption, before %v: want the same claims", got, pvcs)
	}
	load.verify(f, "every EtcdMember deleted (finalizers stripped) and re-adopted from its PVC")
}

// waitReadopted waits until every member of before is an EtcdMember again under its old name,
// not being deleted, as a new object (its UID is not the one in oldUIDs), and there are no
// other EtcdMembers.
func waitReadopted(f *framework.Test, name string, before map[string]string, oldUIDs map[string]types.UID) {
	f.T.Helper()
	err := f.Poll("every EtcdMember re-adopted under its old name", healTimeout, func(ctx context.Context) (bool, string, error) {
		ms, err := listMembers(ctx, f, name)
		if err != nil {
			return false, errState(ctx, err), nil
		}
		var state []string
		readopted := 0
		for _, m := range ms {
			if _, ok := before[m.Name]; ok && m.UID != oldUIDs[m.Name] && m.DeletionTimestamp == nil {
				readopted++
			}
			state = append(state, m.Name)
		}
		return readopted == len(before) && len(ms) == len(before), fmt.Sprintf("EtcdMembers %v, %d re-adopted", state, readopted), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
