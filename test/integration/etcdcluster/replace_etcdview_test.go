package etcdcluster_test

import (
	"fmt"
	"slices"
	"testing"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// replaceViaEtcd converges a 3-member PVC cluster under both controllers, lets fault damage the
// member at index 1 (by name), and waits until that member is replaced: 3 members again, none
// of them the damaged one, and etcd no longer listing its ID. It returns the fake etcd.
func replaceViaEtcd(t *testing.T, name string, fault func(f *etcdfake.Cluster, id uint64)) *etcdfake.Cluster {
	t.Helper()
	w := newWorld(t)
	w.kubeletOnly = true
	w.startController()
	w.newCluster(name, 3)
	wait.Eventually(t, convergeTimeout, "3 members", w.converged(name, 3))
	clusterID := w.cluster(name).Status.ClusterID
	before, err := w.members(t.Context(), name)
	if err != nil || len(before) != 3 {
		t.Fatalf("members before: %d, %v", len(before), err)
	}
	victim := before[1]
	id, err := etcdclient.ParseID(victim.Status.MemberID)
	if err != nil {
		t.Fatal(err)
	}
	f := w.fake(name)
	fault(f, id)

	wait.Eventually(t, convergeTimeout, victim.Name+" replaced: 3 members, none of them "+victim.Name, func() error {
		if err := w.converged(name, 3)(); err != nil {
			return err
		}
		ms, err := w.members(t.Context(), name)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(ms, func(m etcdv1alpha2.EtcdMember) bool { return m.Name == victim.Name }) {
			return fmt.Errorf("%s is still an EtcdMember: %w", victim.Name, errNotYet)
		}
		if slices.ContainsFunc(f.Members(), func(e etcdclient.Member) bool { return e.ID == id }) {
			return fmt.Errorf("etcd still lists %s: %w", victim.Status.MemberID, errNotYet)
		}
		return nil
	})
	if got := w.cluster(name).Status.ClusterID; got != clusterID {
		t.Errorf("cluster ID %s after the replacement, was %s", got, clusterID)
	}
	return f
}

// countCalls counts the calls f recorded of method m with argument arg, or with any when arg is
// empty.
func countCalls(f *etcdfake.Cluster, m etcdfake.Method, arg string) int {
	n := 0
	for _, call := range f.Calls() {
		if call.Method == m && (arg == "" || call.Arg == arg) {
			n++
		}
	}
	return n
}

// TestMemberRemovedOutsideIsReplaced: someone runs `etcdctl member remove` on a member. The
// cluster controller sees its recorded ID gone from the member list (RemovedFromCluster),
// deletes the EtcdMember and its PVC without a MemberRemove of its own, and adds a new member.
func TestMemberRemovedOutsideIsReplaced(t *testing.T) {
	t.Parallel()
	f := replaceViaEtcd(t, "removed", func(f *etcdfake.Cluster, id uint64) {
		if _, err := f.MemberRemove(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	})
	if n := countCalls(f, etcdfake.MemberRemove, ""); n != 1 {
		t.Errorf("%d MemberRemove calls, want only the outside one: %v", n, f.Mutations())
	}
}

// TestCorruptAlarmMemberIsReplaced: etcd's corruption check raises CORRUPT for a member. The
// member is removed through the quorum gate and replaced, and the alarm, which makes etcd refuse
// writes cluster-wide, is disarmed once the member is out of etcd.
func TestCorruptAlarmMemberIsReplaced(t *testing.T) {
	t.Parallel()
	var corrupt uint64
	f := replaceViaEtcd(t, "corrupt", func(f *etcdfake.Cluster, id uint64) {
		corrupt = id
		f.RaiseAlarm(etcdclient.Alarm{MemberID: id, Type: etcdclient.AlarmCorrupt})
	})
	wait.Eventually(t, convergeTimeout, "the CORRUPT alarm disarmed", func() error {
		if a := f.Alarms(); len(a) > 0 {
			return fmt.Errorf("alarms %v: %w", a, errNotYet)
		}
		return nil
	})
	if n := countCalls(f, etcdfake.MemberRemove, etcdclient.FormatID(corrupt)); n != 1 {
		t.Errorf("%d MemberRemove calls for the corrupt member, want 1: %v", n, f.Mutations())
	}
}
