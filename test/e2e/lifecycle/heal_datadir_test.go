//go:build e2e

package lifecycle

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// Data-dir faults: a 3-member PVC cluster under traffic; one member has its etcd frozen
// (SIGSTOP, so that it cannot rewrite what is damaged), its data dir damaged, and the process
// killed; the member must be classified, replaced and the cluster converged. The scenarios
// differ only in the member, its leadership, the damage and the verdict: they are the cases of
// dataDirCases, each run by its own top-level test (below), so that test names, labels, -run
// filters and the timing report keep their names.

// dataDirDamage damages the data dir mounted at mountPath in the Pod's etcd container; it is a
// method of framework.DataDirFaults (WipeDataDir, CorruptDataDir) taken as a function.
type dataDirDamage func(d framework.DataDirFaults, ctx context.Context, namespace, pod, mountPath string) error

// dataDirCase is one data-dir fault scenario.
type dataDirCase struct {
	// victim picks the damaged member.
	victim pick
	// lead says whether etcd's leadership is moved to the victim before the fault (true) or
	// off it (false).
	lead bool
	// damage is what happens to the victim's data dir while its etcd is frozen.
	damage dataDirDamage
	// reason is the Healthy=False reason and the removal-reason the victim must get.
	reason string
	// measure and note are the timing report's key and note for fault → converged.
	measure, note string
}

// dataDirCases are the data-dir fault scenarios by name; the name is also the EtcdCluster's
// and appears in the traffic check's note.
var dataDirCases = map[string]dataDirCase{
	"wiped": {
		victim: pickLastJoiner, damage: framework.DataDirFaults.WipeDataDir,
		reason: health.ReasonDataLost, measure: "pvc-wiped-heal",
		note: "PVC member's data dir wiped, etcd killed → DataLost after two identical exits → replaced, converged with 3 voters (target ≤ 60 s)",
	},
	"wiped2": {
		victim: pickEarlyJoiner, damage: framework.DataDirFaults.WipeDataDir,
		reason: health.ReasonDataLost, measure: "pvc-wiped-early-joiner-heal",
		note: "PVC member that joined a 2-member cluster: data dir wiped, etcd killed → replaced, converged with 3 voters",
	},
	"wiped-leader": {
		victim: pickSeed, lead: true, damage: framework.DataDirFaults.WipeDataDir,
		reason: health.ReasonDataLost, measure: "pvc-wiped-leader-heal",
		note: "PVC seed member's data dir wiped while it led, etcd killed → the guard refuses it twice → DataLost → replaced, converged with 3 voters (target ≤ 60 s)",
	},
	"wiped-leader2": {
		victim: pickLastJoiner, lead: true, damage: framework.DataDirFaults.WipeDataDir,
		reason: health.ReasonDataLost, measure: "pvc-wiped-joiner-leader-heal",
		note: "PVC member (not the seed) data dir wiped while it led, etcd killed → the guard refuses it → DataLost → replaced, converged with 3 voters",
	},
	"corrupt": {
		victim: pickLastJoiner, damage: framework.DataDirFaults.CorruptDataDir,
		reason: health.ReasonDataCorrupt, measure: "pvc-corrupt-heal",
		note: "PVC member's bbolt db corrupted, etcd killed → DataCorrupt after two identical exits → replaced, converged with 3 voters (target ≤ 60 s)",
	},
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
	runDataDirCase(framework.NewTest(t, framework.Smoke), "wiped")
}

// TestPVCMemberDataDirWipedEarlyJoiner is TestPVCMemberDataDirWiped for the member that joined
// when the cluster had 2 members: its Pod's --initial-cluster names 2 members, so etcd alone,
// restarted on the empty data dir, would exit with "member count is unequal", which reads as
// RemovedFromCluster (docs/e2e-lifecycle.md, finding 6). The guard refuses first, so the member
// is DataLost like any wiped member. Records pvc-wiped-early-joiner-heal.
func TestPVCMemberDataDirWipedEarlyJoiner(t *testing.T) {
	t.Parallel()
	runDataDirCase(framework.NewTest(t), "wiped2")
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
	runDataDirCase(framework.NewTest(t, framework.Smoke), "wiped-leader")
}

// TestPVCLeaderDataDirWiped is TestPVCSeedLeaderDataDirWiped for a leader that is not the seed
// (its Pod says --initial-cluster-state=existing). Records pvc-wiped-joiner-leader-heal.
func TestPVCLeaderDataDirWiped(t *testing.T) {
	t.Parallel()
	runDataDirCase(framework.NewTest(t), "wiped-leader2")
}

// TestPVCMemberDataDirCorrupted is TestPVCMemberDataDirWiped with the member's bbolt database
// overwritten instead (both meta pages): etcd refuses to open it on every start ("invalid
// database"), the member is Healthy=False/DataCorrupt after two identical exits and replaced.
// Records pvc-corrupt-heal. Not smoke: it runs the same replacement path as the wiped data dir.
func TestPVCMemberDataDirCorrupted(t *testing.T) {
	t.Parallel()
	runDataDirCase(framework.NewTest(t), "corrupt")
}

// runDataDirCase runs the case of dataDirCases called name: the victim (moved to or off etcd's
// leadership) is frozen, damaged and killed; it must turn Healthy=False with the case's reason,
// be annotated removal-reason with it and be replaced, and while it is down the cluster must
// say readyMembers 2 and Degraded=True naming it.
func runDataDirCase(f *framework.Test, name string) {
	t := f.T
	tc, ok := dataDirCases[name]
	if !ok {
		t.Fatalf("no data-dir case %q", name)
	}
	dataDirs := f.RequireDataDirFaults()
	requireOperator(f)
	signals := f.RequireContainerSignals()
	containers := f.RequireContainerFaults()
	r := startHeal(f, newCluster(f, name, 3))
	// etcd itself notices a wiped follower (its raft log is behind what the leader committed
	// to it), but not a wiped leader: the new leader probes its log from index 1 and replicates
	// to it. Only the operator's data-dir guard catches that one (docs/e2e-lifecycle.md,
	// finding 5), so the scenarios choose explicitly.
	victim := pickMember(f, name, tc.victim)
	if tc.lead {
		moveLeaderTo(f, name, victim)
	} else {
		moveLeaderAway(f, name, victim)
	}

	start := time.Now()
	if err := signals.SignalContainer(f.Ctx, f.Namespace, victim, desired.ContainerName, "SIGSTOP"); err != nil {
		t.Fatal(err)
	}
	if err := tc.damage(dataDirs, f.Ctx, f.Namespace, victim, desired.DataMountPath); err != nil {
		t.Fatal(err)
	}
	if err := containers.KillContainer(f.Ctx, f.Namespace, victim, desired.ContainerName); err != nil {
		t.Fatal(err)
	}
	waitReplaced(f, name, victim, healTimeout)
	r.hist.logStatusHealed(f, tc.measure, start)
	f.Record(tc.measure, since(start), tc.note)

	r.hist.requireReplacedFor(f, victim, tc.reason)
	r.hist.requireCluster(f, "readyMembers 2 and Degraded=True naming "+victim, func(s clusterSeen) bool {
		d := meta.FindStatusCondition(s.conditions, etcdv1alpha2.ConditionDegraded)
		return s.readyMembers == 2 && d != nil && d.Status == metav1.ConditionTrue && strings.Contains(d.Message, victim)
	})
	r.finishReplaced(f, "PVC member's data dir "+name+" and the member replaced", victim)
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
	own := memberEndpoint(f, name, member)
	f.MoveLeader(framework.LeaderMove{
		From: own, To: target, Timeout: scaleTimeout,
		Observe: own, What: "a leader other than " + member,
		Until: func(l uint64) bool { return hexID(l) != leader },
	})
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
	f.MoveLeader(framework.LeaderMove{
		From: memberEndpoint(f, name, current), To: target, Timeout: scaleTimeout,
		Observe: memberEndpoint(f, name, member), What: member + " leading",
		Until: func(l uint64) bool { return l == target },
	})
	f.T.Logf("moved etcd's leadership from %s (%s) to %s", current, leader, member)
}

// memberEndpoint is the client URL of the member's Pod, by Pod IP.
func memberEndpoint(f *framework.Test, name, member string) string {
	f.T.Helper()
	eps, err := f.MemberEndpoints(f.Ctx, f.Namespace, podSelector(name)+","+etcdv1alpha2.LabelComponent+"="+member, false)
	if err != nil {
		f.T.Fatal(err)
	}
	return eps[0]
}
