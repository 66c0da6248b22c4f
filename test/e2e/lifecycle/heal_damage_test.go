//go:build e2e

package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// Damaged data (issue #15, docs/design/healing.md, "Damaged data"): a 3-member PVC cluster under
// traffic that took raft snapshots; one member's etcd is frozen, its data dir damaged one way,
// its etcd killed and its Pod deleted. The recreated Pod runs the template the member ran, and
// its etcd fails at every start on the damaged data, whatever it prints; at the second failed
// start the member is Healthy=False (DataCorrupt, or a known pattern's class) and replaced. Damage
// etcd repairs by itself (member/snap removed, in 3.5 and 3.6) must not cost the member its
// identity: it comes back with its data.

// bootDamage is one kind of damage.
type bootDamage struct {
	// damage changes the member's data dir, memberDir being its "member" folder.
	damage func(memberDir string) error
	// reason is the Healthy=False reason and removal-reason the member must get.
	reason string
	// survivedBy are the etcd minors that repair this damage by themselves.
	survivedBy []string
	// note is the timing report's note.
	note string
}

// bootDamages are the kinds of damage by name; the EtcdCluster is named damage-<name>.
var bootDamages = map[string]bootDamage{
	"wal-truncated": {damage: truncateWAL, reason: health.ReasonDataLost,
		note: "PVC member's WAL cut to half of what was written, Pod deleted → replaced (raft log lost)"},
	"wal-garbage": {damage: garbageWALHeader, reason: health.ReasonDataCorrupt,
		note: "PVC member's first WAL file overwritten at the start with 4 KiB of random bytes (issue #15), Pod deleted → replaced"},
	"db-garbage": {damage: garbageDBHeader, reason: health.ReasonDataCorrupt,
		note: "PVC member's bbolt header (both meta pages) overwritten with random bytes, Pod deleted → replaced"},
	"snap-missing": {damage: removeSnapDir, reason: health.ReasonDataCorrupt, survivedBy: []string{"3.5", "3.6"},
		note: "PVC member's member/snap removed, Pod deleted → 3.7 replaces it; 3.5/3.6 rebuild the database from the WAL"},
}

// damageSnapshotCount makes the members take raft snapshots before the damage (damageKeys
// writes are more), as any member that ran for a while has.
const (
	damageSnapshotCount = 100
	damageKeys          = 150
)

// TestPVCMemberDamagedWALTruncated: the WAL cut short. Records pvc-damage-wal-truncated-*.
func TestPVCMemberDamagedWALTruncated(t *testing.T) {
	t.Parallel()
	runBootDamage(framework.NewTest(t), "wal-truncated")
}

// TestPVCMemberDamagedWALGarbage: issue #15's damage, "cannot use none as id".
// Records pvc-damage-wal-garbage-*.
func TestPVCMemberDamagedWALGarbage(t *testing.T) {
	t.Parallel()
	runBootDamage(framework.NewTest(t), "wal-garbage")
}

// TestPVCMemberDamagedDBGarbage: the bbolt header destroyed. Records pvc-damage-db-garbage-*.
func TestPVCMemberDamagedDBGarbage(t *testing.T) {
	t.Parallel()
	runBootDamage(framework.NewTest(t), "db-garbage")
}

// TestPVCMemberDamagedSnapMissing: member/snap removed. Records pvc-damage-snap-missing-*.
func TestPVCMemberDamagedSnapMissing(t *testing.T) {
	t.Parallel()
	runBootDamage(framework.NewTest(t), "snap-missing")
}

// runBootDamage runs the kind of damage called name on the cluster's last joiner (not the
// leader), then deletes its Pod.
func runBootDamage(f *framework.Test, name string) {
	t := f.T
	tc := bootDamages[name]
	dataDirs := f.RequireDataDirFaults()
	requireOperator(f)
	signals := f.RequireContainerSignals()
	containers := f.RequireContainerFaults()
	ec := newCluster(f, "damage-"+name, 3)
	ec.Spec.Options = &etcdv1alpha2.EtcdOptions{SnapshotCount: ptr.To[int64](damageSnapshotCount)}
	r := startHeal(f, ec)
	writeKeys(f, ec.Name, "/damage/", damageKeys)
	victim := pickMember(f, ec.Name, pickLastJoiner)
	moveLeaderAway(f, ec.Name, victim)
	old := &corev1.Pod{}
	if err := kc(f).Get(f.Ctx, types.NamespacedName{Namespace: f.Namespace, Name: victim}, old); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if err := signals.SignalContainer(f.Ctx, f.Namespace, victim, desired.ContainerName, "SIGSTOP"); err != nil {
		t.Fatal(err)
	}
	if err := dataDirs.DamageDataDir(f.Ctx, f.Namespace, victim, desired.DataMountPath, func(dir string) error {
		m, err := memberDir(dir)
		if err != nil {
			return err
		}
		return tc.damage(m)
	}); err != nil {
		t.Fatal(err)
	}
	if err := containers.KillContainer(f.Ctx, f.Namespace, victim, desired.ContainerName); err != nil {
		t.Fatal(err)
	}
	if err := kc(f).Delete(f.Ctx, old); err != nil {
		t.Fatal(err)
	}
	firstFail := watchFirstFailedStart(f, victim, old.UID)

	if slices.Contains(tc.survivedBy, health.Minor(etcdVersion())) {
		after := requireHealed(f, ec.Name, 3, r.clusterID)
		if after[victim] != r.before[victim] {
			t.Fatalf("%s came back as %q, was %q: damage etcd repairs must not cost the member its identity", victim, after[victim], r.before[victim])
		}
		f.Record("pvc-damage-"+name+"-recovered", since(start), tc.note+" (etcd "+etcdVersion()+": recovered in place)")
		r.hist.stop()
		r.load.verify(f, "PVC member's data dir damaged ("+name+") and repaired by etcd")
		return
	}
	waitReplaced(f, ec.Name, victim, healTimeout)
	f.Record("pvc-damage-"+name+"-heal", since(start), tc.note+": fault → converged with 3 voters")
	if at := firstFail(); !at.IsZero() {
		f.Record("pvc-damage-"+name+"-first-fail-to-healed", time.Since(at).Round(time.Millisecond),
			tc.note+": first failed start of the recreated Pod → converged with 3 voters (target ≤ 60 s)")
	}
	r.hist.requireReplacedFor(f, victim, tc.reason)
	r.finishReplaced(f, "PVC member's data dir damaged ("+name+") and the member replaced", victim)
}

// watchFirstFailedStart polls the member's recreated Pod (a UID other than old) until the heal
// ends and returns a function giving when its etcd container first terminated, as the kubelet
// recorded it (zero when none was seen).
func watchFirstFailedStart(f *framework.Test, member string, old types.UID) func() time.Time {
	var mu sync.Mutex
	var first time.Time
	ctx, cancel := context.WithCancel(f.Ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			p := &corev1.Pod{}
			if err := kc(f).Get(ctx, types.NamespacedName{Namespace: f.Namespace, Name: member}, p); err == nil && p.UID != old {
				if at := earliestTermination(p); !at.IsZero() {
					mu.Lock()
					if first.IsZero() || at.Before(first) {
						first = at
					}
					mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return func() time.Time {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return first
	}
}

// earliestTermination is when the Pod's etcd container terminated, the earlier of its current
// and its last state; zero when neither is a termination.
func earliestTermination(p *corev1.Pod) time.Time {
	var at time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != desired.ContainerName {
			continue
		}
		for _, term := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if term != nil && (at.IsZero() || term.FinishedAt.Time.Before(at)) {
				at = term.FinishedAt.Time
			}
		}
	}
	return at
}

// memberDir finds etcd's "member" folder in a data volume: at its root, or one folder below
// (the data-dir-subpath annotation).
func memberDir(volume string) (string, error) {
	for _, pattern := range []string{"member", "*/member"} {
		ms, err := filepath.Glob(filepath.Join(volume, pattern, "wal"))
		if err == nil && len(ms) == 1 {
			return filepath.Dir(ms[0]), nil
		}
	}
	return "", fmt.Errorf("no etcd member folder in %s", volume)
}

func walFiles(memberDir string) ([]string, error) {
	wals, err := filepath.Glob(filepath.Join(memberDir, "wal", "*.wal"))
	if err != nil || len(wals) == 0 {
		return nil, errors.Join(errors.New("no WAL file"), err)
	}
	slices.Sort(wals)
	return wals, nil
}

// truncateWAL cuts the last WAL file to half of what was written (files are preallocated with
// zeros).
func truncateWAL(memberDir string) error {
	wals, err := walFiles(memberDir)
	if err != nil {
		return err
	}
	last := wals[len(wals)-1]
	b, err := os.ReadFile(last)
	if err != nil {
		return err
	}
	return os.Truncate(last, int64(len(bytes.TrimRight(b, "\x00"))/2))
}

func garbageWALHeader(memberDir string) error {
	wals, err := walFiles(memberDir)
	if err != nil {
		return err
	}
	return overwriteStart(wals[0], 4096)
}

func garbageDBHeader(memberDir string) error {
	return overwriteStart(filepath.Join(memberDir, "snap", "db"), 2*4096)
}

func removeSnapDir(memberDir string) error {
	return os.RemoveAll(filepath.Join(memberDir, "snap"))
}

// overwriteStart writes n pseudo-random bytes (fixed seed) over the start of path and syncs.
func overwriteStart(path string, n int) error {
	garbage := make([]byte, n)
	r := rand.New(rand.NewPCG(15, 15)) //nolint:gosec // test damage, not security
	for i := range garbage {
		garbage[i] = byte(r.UintN(256))
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(garbage, 0)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}
