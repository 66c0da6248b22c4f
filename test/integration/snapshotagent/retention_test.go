package snapshotagent_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/etcd-operator/etcd-operator/internal/cronslot"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
	"github.com/etcd-operator/etcd-operator/test/utils/agentrun"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
	"github.com/etcd-operator/etcd-operator/test/utils/s3server"
)

// scheduleUID is the UID of the schedule "nightly" in these tests.
const scheduleUID = "uid-schedule-nightly"

// scheduledEnv makes env the environment of a snapshot of the schedule named schedule, with
// keepLast 3 when retain is set.
func scheduledEnv(env map[string]string, schedule, uid string, retain bool) map[string]string {
	env[snapshot.EnvScheduleName], env[snapshot.EnvScheduleUID] = schedule, uid
	if retain {
		env[snapshot.EnvRetentionKeepLast] = "3"
		env[snapshot.EnvRetentionTimeZone] = "Europe/Berlin"
	}
	return env
}

// prunedBy is how many artifacts the i-th (from 0) of the schedule's snapshots prunes under
// keepLast 3: none while there are three or fewer, then the oldest one each time.
func prunedBy(i int) int {
	if i < 3 {
		return 0
	}
	return 1
}

// slotNames are the snapshot names of n hourly slots of schedule, oldest first.
func slotNames(schedule string, n int) []string {
	start := time.Date(2025, 1, 6, 0, 0, 0, 0, time.UTC)
	out := make([]string, n)
	for i := range out {
		out[i] = cronslot.Name(schedule, start.Add(time.Duration(i)*time.Hour))
	}
	return out
}

// TestRetentionOnS3 takes five snapshots of the schedule nightly (keepLast 3) into a real S3
// server, next to objects it must never touch: a one-off snapshot and an object without marks
// that are both named like nightly's slots, snapshots of the schedule nightly-eu, and one of an
// earlier schedule named nightly (another UID). Exactly the three newest of nightly's artifacts
// are left, each with its sidecar; everything else is intact.
func TestRetentionOnS3(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	srv := s3server.StartForTest(t, s3server.Options{})
	c := startCluster(ctx, t, "3.6", etcdproc.Options{})
	if _, err := client(t, c, "", "").Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	bucket := srv.CreateBucketForTest(t)
	foreign, oneOff := foreignSnapshots(t, func(name string, edit func(map[string]string)) {
		env := s3Env(c, srv, bucket, name, "uid-"+name)
		edit(env)
		if code, res := agentrun.Snapshot(ctx, t, env); code != 0 {
			t.Fatalf("snapshot %s: %+v", name, res)
		}
	})
	unmarked := "prod/etcd/" + slotNames("nightly", 1)[0] + ".db"
	if _, err := srv.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &unmarked, Body: strings.NewReader("by hand")}); err != nil {
		t.Fatal(err)
	}

	names := slotNames("nightly", 6)[1:]
	for i, name := range names {
		code, res := agentrun.Snapshot(ctx, t, scheduledEnv(s3Env(c, srv, bucket, name, "uid-"+name), "nightly", scheduleUID, true))
		if code != 0 || res.PruneError != "" || res.PrunedCount != prunedBy(i) {
			t.Fatalf("snapshot %d (%s): exit %d, %+v; want %d pruned", i, name, code, res, prunedBy(i))
		}
	}
	got := s3Keys(ctx, t, srv, bucket)
	var want []string
	for _, name := range slices.Concat(names[2:], foreign, []string{oneOff}) {
		want = append(want, "prod/etcd/"+name+".db", "prod/etcd/"+name+".db.sha256")
	}
	want = append(want, unmarked)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("bucket holds\n%v\nwant\n%v", got, want)
	}
	_, head := object(ctx, t, srv, bucket, "prod/etcd/"+names[4]+".db")
	if head.Metadata[snapshot.MetadataScheduleUID] != scheduleUID {
		t.Errorf("the newest artifact's metadata %v: no schedule UID", head.Metadata)
	}
}

// foreignSnapshots takes, through take, the snapshots a retention of nightly must not touch:
// a one-off snapshot named like one of nightly's slots (a later one than any of the test's:
// counted by mistake, it would push one of nightly's out of keepLast), two of the schedule
// nightly-eu (with its own keepLast 3, which must not count nightly's), and one of an earlier
// schedule named nightly. It returns the names of those that record a schedule, and the
// one-off's.
func foreignSnapshots(t *testing.T, take func(name string, edit func(map[string]string))) (scheduled []string, oneOff string) {
	t.Helper()
	later := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	oneOff = cronslot.Name("nightly", later)
	take(oneOff, func(map[string]string) {})
	eu := slotNames("nightly-eu", 2)
	for _, name := range eu {
		take(name, func(env map[string]string) { scheduledEnv(env, "nightly-eu", "uid-schedule-nightly-eu", true) })
	}
	earlier := cronslot.Name("nightly", later.Add(time.Hour))
	take(earlier, func(env map[string]string) { scheduledEnv(env, "nightly", "uid-schedule-deleted", false) })
	return append(eu, earlier), oneOff
}

func s3Keys(ctx context.Context, t *testing.T, srv *s3server.Server, bucket string) []string {
	t.Helper()
	out, err := srv.Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	slices.Sort(keys)
	return keys
}

// TestRetentionOnPVC is TestRetentionOnS3 on a folder standing for a claim: the pruned
// artifacts go with every sibling, and the rest of the folder stays as it was.
func TestRetentionOnPVC(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c := startCluster(ctx, t, "3.6", etcdproc.Options{})
	if _, err := client(t, c, "", "").Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	foreign, oneOff := foreignSnapshots(t, func(name string, edit func(map[string]string)) {
		env := pvcEnv(c, dir, name, "uid-"+name)
		edit(env)
		if code, res := agentrun.Snapshot(ctx, t, env); code != 0 {
			t.Fatalf("snapshot %s: %+v", name, res)
		}
	})
	folder := filepath.Join(dir, "etcd", "daily")
	unmarked := slotNames("nightly", 1)[0] + ".db"
	if err := os.WriteFile(filepath.Join(folder, unmarked), []byte("by hand"), 0o600); err != nil {
		t.Fatal(err)
	}
	names := slotNames("nightly", 6)[1:]
	for i, name := range names {
		code, res := agentrun.Snapshot(ctx, t, scheduledEnv(pvcEnv(c, dir, name, "uid-"+name), "nightly", scheduleUID, true))
		if code != 0 || res.PruneError != "" || res.PrunedCount != prunedBy(i) {
			t.Fatalf("snapshot %d (%s): exit %d, %+v; want %d pruned", i, name, code, res, prunedBy(i))
		}
	}
	entries, err := os.ReadDir(folder)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := []string{unmarked, oneOff + ".db", oneOff + ".db.sha256", oneOff + ".db.uid", oneOff + ".db.version"}
	for _, name := range slices.Concat(names[2:], foreign) {
		want = append(want, name+".db", name+".db.schedule", name+".db.sha256", name+".db.uid", name+".db.version")
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("folder holds\n%v\nwant\n%v", got, want)
	}
}
