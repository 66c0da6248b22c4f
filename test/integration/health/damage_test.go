package health_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/health"
)

// damageCases damage a stopped voter's data dir the ways a disk, a filesystem or a person can,
// and restart it with state existing in its 3-member cluster, as its recreated Pod would
// (docs/design/healing.md, "Damaged data"). Unlike fixtureCases they are not each a pattern
// the classifier must know: the operator replaces a member that ran before and fails every
// boot with the same template whatever etcd prints, unless etcd says its flags are wrong. So
// every class but Misconfigured is accepted, and the fixtures record what each minor prints.
var damageCases = []fixtureCase{
	{name: "damage-wal-truncated", want: notMisconfigured, run: damageWALTruncated},
	{name: "damage-wal-garbage-header", want: notMisconfigured, run: damageWALGarbageHeader},
	{name: "damage-db-garbage-header", want: notMisconfigured, run: damageDBGarbageHeader},
	{name: "damage-snap-dir-missing", want: notMisconfigured, run: damageSnapDirMissing},
}

// notMisconfigured is every class a damaged data dir may print as.
var notMisconfigured = []health.FatalClass{health.ClassNone, health.ClassCrashed, health.ClassDataCorrupt,
	health.ClassDataLost, health.ClassRemovedFromCluster}

// allFixtureCases are the cases TestTerminationFixtures runs.
func allFixtureCases() []fixtureCase {
	return slices.Concat(fixtureCases, damageCases)
}

// Damage sizes: the reported incident overwrote 4 KiB, one bbolt page and the WAL's first
// records; bbolt keeps two meta pages (the file's first 8 KiB) and survives the loss of one.
const (
	damageGarbageBytes = 4096
	bboltMetaBytes     = 2 * 4096
)

// damageSnapshotCount is the --snapshot-count of the damage cases' members, and damageKeys the
// keys written before the damage: enough for raft snapshots, so that the WAL no longer holds
// the whole log (as in any member that ran for a while) and the bbolt file cannot be rebuilt
// from it.
const (
	damageSnapshotCount = 50
	damageKeys          = 120
)

// damagedMember starts a 3-member cluster with raft snapshots taken, stops its third member,
// lets damage change that member's data dir, and restarts it with state existing, as its
// recreated Pod would.
func damagedMember(ctx context.Context, t *testing.T, h *harness, damage func(dataDir string)) *proc {
	t.Helper()
	ms := h.members(t, 3)
	token := "fixture-damage"
	args := func(m *member, state string) []string {
		return append(h.args(m, initialCluster(ms), token, state), fmt.Sprintf("--snapshot-count=%d", damageSnapshotCount))
	}
	ps := make([]*proc, len(ms))
	for i, m := range ms {
		ps[i] = h.start(t, m, args(m, "new"))
	}
	for _, p := range ps {
		waitHealthy(ctx, t, p)
	}
	cli := dial(t, ms[:2])
	h.clusterID = clusterIDOf(ctx, t, cli)
	writeKeys(ctx, t, cli, damageKeys)
	ps[2].stop(t)
	if snaps, _ := filepath.Glob(filepath.Join(ms[2].dataDir, "member", "snap", "*.snap")); len(snaps) == 0 {
		t.Fatal("no raft snapshot was taken")
	}
	damage(ms[2].dataDir)
	return h.start(t, ms[2], args(ms[2], "existing"))
}

// damaged is damagedMember for the fixtures: the failing start is captured.
func damaged(ctx context.Context, t *testing.T, h *harness, damage func(dataDir string)) *capture {
	t.Helper()
	return h.waitExit(t, damagedMember(ctx, t, h, damage), exitTimeout)
}

// TestDamageEtcdSurvives pins the damage that etcd repairs by itself, which is therefore no
// reason to replace a member (docs/design/healing.md, "Damaged data"): one of bbolt's two meta
// pages overwritten (bbolt opens the file from the other), and member/snap removed while the
// WAL still holds the whole log (etcd rebuilds the bbolt file from it): always before the first
// raft snapshot, and in 3.5 and 3.6 also after, until old WAL files are purged (3.7 insists on
// the snapshot's bbolt file: damage-snap-dir-missing). Each member becomes healthy again.
func TestDamageEtcdSurvives(t *testing.T) {
	t.Parallel()
	type survivable struct {
		snapshots bool
		minors    []string
		damage    func(t *testing.T, dataDir string)
	}
	cases := map[string]survivable{
		"db-one-meta-page": {snapshots: true, damage: func(t *testing.T, dataDir string) {
			t.Helper()
			overwriteStart(t, filepath.Join(dataDir, "member", "snap", "db"), damageGarbageBytes)
		}},
		"snap-dir-missing-before-raft-snapshot": {damage: removeSnapDir},
		"snap-dir-missing":                      {snapshots: true, minors: snapDirSurvivors, damage: removeSnapDir},
	}
	for _, dir := range etcdBinDirs(t) {
		bin := filepath.Join(dir, "etcd")
		minor := health.Minor(etcdVersion(t, bin))
		for name, c := range cases {
			if c.minors != nil && !slices.Contains(c.minors, minor) {
				continue
			}
			t.Run(minor+"/"+name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
				defer cancel()
				h := &harness{bin: bin, root: t.TempDir(), minor: minor}
				damage := func(dataDir string) { c.damage(t, dataDir) }
				if c.snapshots {
					waitHealthy(ctx, t, damagedMember(ctx, t, h, damage))
					return
				}
				ms, ps, token := h.startCluster(ctx, t, 3)
				writeKeys(ctx, t, dial(t, ms[:2]), 20)
				ps[2].stop(t)
				damage(ms[2].dataDir)
				waitHealthy(ctx, t, h.start(t, ms[2], h.args(ms[2], initialCluster(ms), token, "existing")))
			})
		}
	}
}

// snapDirSurvivors are the minors that rebuild a member's bbolt file from its WAL when
// member/snap is gone although raft snapshots were taken.
var snapDirSurvivors = []string{"3.5", "3.6"}

// damageWALTruncated cuts the member's WAL in the middle of what was written, as a lost tail
// of writes would (a volume snapshot taken mid-write, a filesystem repair).
func damageWALTruncated(ctx context.Context, t *testing.T, h *harness) *capture {
	t.Helper()
	return damaged(ctx, t, h, func(dataDir string) {
		wal := lastWAL(t, dataDir)
		b, err := os.ReadFile(wal)
		if err != nil {
			t.Fatal(err)
		}
		// WAL files are preallocated with zeros; keep the first half of what was written.
		used := len(bytes.TrimRight(b, "\x00"))
		if err := os.Truncate(wal, int64(used/2)); err != nil {
			t.Fatal(err)
		}
	})
}

// damageWALGarbageHeader overwrites the start of the member's first WAL file with random
// bytes: the incident of issue #15, where etcd panicked "cannot use none as id".
func damageWALGarbageHeader(ctx context.Context, t *testing.T, h *harness) *capture {
	t.Helper()
	return damaged(ctx, t, h, func(dataDir string) {
		wals := walFiles(t, dataDir)
		overwriteStart(t, wals[0], damageGarbageBytes)
	})
}

// damageDBGarbageHeader overwrites the header of the member's bbolt file, both meta pages,
// with random bytes (one alone bbolt survives: TestDamageEtcdSurvives).
func damageDBGarbageHeader(ctx context.Context, t *testing.T, h *harness) *capture {
	t.Helper()
	return damaged(ctx, t, h, func(dataDir string) {
		overwriteStart(t, filepath.Join(dataDir, "member", "snap", "db"), bboltMetaBytes)
	})
}

// damageSnapDirMissing removes member/snap, which holds the bbolt file and the raft
// snapshots, from a member that took raft snapshots: the WAL alone no longer holds the log.
func damageSnapDirMissing(ctx context.Context, t *testing.T, h *harness) *capture {
	t.Helper()
	if slices.Contains(snapDirSurvivors, h.minor) {
		t.Skipf("etcd %s rebuilds the bbolt file from the WAL: TestDamageEtcdSurvives", h.minor)
	}
	return damaged(ctx, t, h, func(dataDir string) { removeSnapDir(t, dataDir) })
}

func removeSnapDir(t *testing.T, dataDir string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(dataDir, "member", "snap")); err != nil {
		t.Fatal(err)
	}
}

func clusterIDOf(ctx context.Context, t *testing.T, cli *clientv3.Client) string {
	t.Helper()
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := cli.MemberList(lctx)
	if err != nil {
		t.Fatalf("listing members: %v", err)
	}
	return strconv.FormatUint(list.Header.ClusterId, 16)
}

func walFiles(t *testing.T, dataDir string) []string {
	t.Helper()
	wals, err := filepath.Glob(filepath.Join(dataDir, "member", "wal", "*.wal"))
	if err != nil || len(wals) == 0 {
		t.Fatalf("no WAL file: %v", err)
	}
	slices.Sort(wals)
	return wals
}

func lastWAL(t *testing.T, dataDir string) string {
	t.Helper()
	wals := walFiles(t, dataDir)
	return wals[len(wals)-1]
}

// overwriteStart writes n pseudo-random bytes (a fixed seed, so a rerun damages alike) over the
// start of path.
func overwriteStart(t *testing.T, path string, n int) {
	t.Helper()
	garbage := make([]byte, n)
	r := rand.New(rand.NewPCG(15, 15)) //nolint:gosec // test damage, not security
	for i := range garbage {
		garbage[i] = byte(r.UintN(256))
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(garbage, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
