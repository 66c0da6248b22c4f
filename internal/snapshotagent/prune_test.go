package snapshotagent

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/etcd-operator/etcd-operator/internal/agentenv"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

const scheduleUID = "uid-schedule-nightly"

// scheduled is the schedule nightly with keepLast 3, whose snapshot nightly-1000 this run takes.
func scheduled(cfg *snapshot.Config) {
	cfg.SnapshotName = "nightly-1000"
	cfg.Schedule = &snapshot.ScheduleConfig{Name: "nightly", UID: scheduleUID, Retention: &snapshot.RetentionConfig{KeepLast: 3}}
}

// scheduledPVCAgent is an agent taking nightly-1000 into a fresh folder.
func scheduledPVCAgent(t *testing.T, f *fakeEtcd) (*agent, *pvcDestination) {
	t.Helper()
	a, _ := pvcAgent(t, f, ourUID)
	scheduled(&a.cfg)
	dest := newPVCDestination(snapshot.PVCConfig{Dir: t.TempDir(), Claim: "backups", SubPath: "etcd"}, a.cfg.SnapshotName, ourUID, scheduleUID)
	a.dest = dest
	return a, dest
}

// writeArtifact writes <name>.db and the siblings a snapshot leaves; scheduleUID "" writes no
// .schedule file.
func writeArtifact(t *testing.T, dir, name, scheduleUID string) {
	t.Helper()
	files := map[string]string{".db": "data", ".db.sha256": "sum", ".db.uid": "uid-" + name, ".db.version": "3.6.16"}
	if scheduleUID != "" {
		files[".db.schedule"] = scheduleUID + "\n"
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for suffix, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name+suffix), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAgentPrunesTheSchedulesOldArtifactsOnPVC: after nightly-1000 is stored, keepLast 3 keeps
// it and the two newest of the schedule's earlier artifacts; the older ones go with every
// sibling. A file of the schedule nightly-eu, one without a .schedule mark, one that records
// another schedule's UID, and files that merely start with nightly- stay.
func TestAgentPrunesTheSchedulesOldArtifactsOnPVC(t *testing.T) {
	t.Parallel()
	f := healthyEtcd(10_000)
	a, dest := scheduledPVCAgent(t, f)
	for _, name := range []string{"nightly-100", "nightly-200", "nightly-300", "nightly-400"} {
		writeArtifact(t, dest.folder, name, scheduleUID)
	}
	writeArtifact(t, dest.folder, "nightly-eu-150", "uid-schedule-nightly-eu")
	writeArtifact(t, dest.folder, "nightly-50", "")              // a one-off snapshot named like a slot
	writeArtifact(t, dest.folder, "nightly-60", "uid-recreated") // the schedule's predecessor of the same name
	writeArtifact(t, dest.folder, "nightly-notes", scheduleUID)  // not <schedule>-<digits>
	// A symbolic link is never followed, even with the schedule's mark next to it.
	if err := os.Symlink(filepath.Join(dest.folder, "nightly-50.db"), filepath.Join(dest.folder, "nightly-10.db")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dest.folder, "nightly-10.db.schedule"), []byte(scheduleUID), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := a.run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Pruned, []string{"nightly-100.db", "nightly-200.db"}) || res.PrunedCount != 2 || res.PruneError != "" {
		t.Errorf("pruned %v (%d), error %q; want nightly-100.db and nightly-200.db", res.Pruned, res.PrunedCount, res.PruneError)
	}
	var left []string
	for _, name := range listFolder(t, dest.folder) {
		if strings.HasSuffix(name, ".db") {
			left = append(left, name)
		}
	}
	want := []string{"nightly-10.db", "nightly-1000.db", "nightly-300.db", "nightly-400.db", "nightly-50.db", "nightly-60.db", "nightly-eu-150.db", "nightly-notes.db"}
	if !slices.Equal(left, want) {
		t.Errorf("artifacts left %v, want %v", left, want)
	}
	for _, name := range listFolder(t, dest.folder) {
		if strings.HasPrefix(name, "nightly-100.") || strings.HasPrefix(name, "nightly-200.") {
			t.Errorf("%s was left behind by the prune", name)
		}
	}
	if got := readFile(t, dest.path(snapshot.ScheduleSuffix)); got != scheduleUID+"\n" {
		t.Errorf("the new artifact's .schedule = %q, want the schedule's UID", got)
	}
}

// TestAgentPruneFailureKeepsTheSnapshot: a prune that cannot work (an unknown zone, a folder
// whose marks cannot be read) deletes nothing and is reported in the result; the snapshot is
// stored and the run succeeds.
func TestAgentPruneFailureKeepsTheSnapshot(t *testing.T) {
	t.Parallel()
	f := healthyEtcd(10_000)
	a, dest := scheduledPVCAgent(t, f)
	writeArtifact(t, dest.folder, "nightly-1", scheduleUID)
	a.cfg.Schedule.Retention = &snapshot.RetentionConfig{KeepLast: 1, TimeZone: "Mars/Olympus_Mons"}
	res, err := a.run(t.Context())
	if err != nil || res.URI == "" || res.PrunedCount != 0 || !strings.Contains(res.PruneError, "Mars/Olympus_Mons") {
		t.Fatalf("run = %+v, %v; want the artifact stored and the zone named in pruneError", res, err)
	}
	// A mark that is a folder cannot be read: nothing is deleted, since the rules would count
	// over an incomplete listing.
	a.cfg.Schedule.Retention.TimeZone = "Europe/Berlin"
	if err := os.Mkdir(filepath.Join(dest.folder, "nightly-2.db.schedule"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeArtifact(t, dest.folder, "nightly-2", "")
	res, err = a.run(t.Context())
	if err != nil || res.PrunedCount != 0 || !strings.Contains(res.PruneError, "nightly-2.db") {
		t.Fatalf("run = %+v, %v; want pruneError naming nightly-2.db", res, err)
	}
	if _, err := os.Stat(filepath.Join(dest.folder, "nightly-1.db")); err != nil {
		t.Errorf("nightly-1.db was deleted although the listing failed: %v", err)
	}
}

// TestAgentWithoutRetentionPrunesNothing: a schedule's snapshot without retention is marked
// but deletes nothing; a one-off snapshot writes no .schedule.
func TestAgentWithoutRetentionPrunesNothing(t *testing.T) {
	t.Parallel()
	a, dest := scheduledPVCAgent(t, healthyEtcd(1000))
	a.cfg.Schedule.Retention = nil
	writeArtifact(t, dest.folder, "nightly-1", scheduleUID)
	if res, err := a.run(t.Context()); err != nil || res.PrunedCount != 0 || len(listFolder(t, dest.folder)) != 10 {
		t.Errorf("run = %+v, %v; folder %v", res, err, listFolder(t, dest.folder))
	}
	b, oneOff := pvcAgent(t, healthyEtcd(1000), ourUID)
	if _, err := b.run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(oneOff.path(snapshot.ScheduleSuffix)); !os.IsNotExist(err) {
		t.Errorf("a one-off snapshot wrote a .schedule file: %v", err)
	}
}

// s3Pruning is a fake bucket holding artifacts of the schedule nightly and of others under
// prod/, with the agent of nightly-1000 writing there.
func s3Pruning(t *testing.T) (*fakeS3, *agent) {
	t.Helper()
	f := newFakeS3()
	put := func(key, schedule string) {
		meta := map[string]string{snapshot.MetadataUID: "uid-" + key}
		if schedule != "" {
			meta[snapshot.MetadataScheduleUID] = schedule
		}
		f.objects[key] = fakeObject{data: []byte("x"), metadata: meta}
	}
	for _, name := range []string{"nightly-100", "nightly-200", "nightly-300"} {
		put("prod/"+name+".db", scheduleUID)
		put("prod/"+name+".db.sha256", scheduleUID)
	}
	put("prod/nightly-400.db", scheduleUID)
	put("prod/nightly-400.db.sha256", "")      // a sidecar that is not the schedule's: it stays
	put("prod/nightly-50.db", "")              // no mark
	put("prod/nightly-eu-60.db", "uid-eu")     // another schedule
	put("prod/nightly-70.db", "uid-eu")        // another schedule's UID
	put("prod/sub/nightly-80.db", scheduleUID) // deeper than the folder
	put("nightly-90.db", scheduleUID)          // outside the prefix
	a := &agent{log: logr.Discard()}
	scheduled(&a.cfg)
	a.dest = newS3Destination(f, snapshot.S3Config{S3Store: agentenv.S3Store{Bucket: "etcd"}, KeyPrefix: "prod"}, a.cfg.SnapshotName, ourUID, scheduleUID)
	put("prod/nightly-1000.db", scheduleUID)
	return f, a
}

func TestS3PrunesOnlyTheSchedulesArtifacts(t *testing.T) {
	t.Parallel()
	f, a := s3Pruning(t)
	pruned, err := a.prune(t.Context(), logr.Discard())
	if err != nil || !slices.Equal(pruned, []string{"nightly-100.db", "nightly-200.db"}) {
		t.Fatalf("prune = %v, %v", pruned, err)
	}
	want := []string{"prod/nightly-100.db", "prod/nightly-100.db.sha256", "prod/nightly-200.db", "prod/nightly-200.db.sha256"}
	if !slices.Equal(f.deleted, want) {
		t.Errorf("deleted %v, want %v", f.deleted, want)
	}
	// keepLast 1: nightly-400 goes, its sidecar without the schedule's mark stays.
	a.cfg.Schedule.Retention.KeepLast = 1
	if _, err := a.prune(t.Context(), logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.objects["prod/nightly-400.db.sha256"]; !ok || slices.Contains(f.deleted, "prod/nightly-400.db.sha256") {
		t.Error("a sidecar without the schedule's mark was deleted")
	}
	for _, key := range []string{"prod/nightly-1000.db", "prod/nightly-50.db", "prod/nightly-eu-60.db", "prod/nightly-70.db", "prod/sub/nightly-80.db", "nightly-90.db"} {
		if _, ok := f.objects[key]; !ok {
			t.Errorf("%s was deleted", key)
		}
	}
}

// TestS3PruneFailures: a listing or a HEAD that fails deletes nothing; a refused delete stops
// the prune with the reason.
func TestS3PruneFailures(t *testing.T) {
	t.Parallel()
	f, a := s3Pruning(t)
	f.listErr = responseError(http.StatusForbidden, "AccessDenied")
	if pruned, err := a.prune(t.Context(), logr.Discard()); err == nil || len(pruned) != 0 || len(f.deleted) != 0 {
		t.Errorf("listing denied: pruned %v, %v, deleted %v", pruned, err, f.deleted)
	}
	f.listErr, f.headObjectErr = nil, responseError(http.StatusInternalServerError, "InternalError")
	if pruned, err := a.prune(t.Context(), logr.Discard()); err == nil || len(pruned) != 0 || len(f.deleted) != 0 {
		t.Errorf("HEAD failing: pruned %v, %v, deleted %v", pruned, err, f.deleted)
	}
	f.headObjectErr, f.deleteErr = nil, responseError(http.StatusForbidden, "AccessDenied")
	res := a.applyRetention(t.Context(), logr.Discard(), snapshot.Result{URI: "s3://etcd/prod/nightly-1000.db"})
	if res.URI == "" || res.PrunedCount != 0 || !strings.Contains(res.PruneError, "nightly-100.db") || !strings.Contains(res.PruneError, "AccessDenied") {
		t.Errorf("delete denied: %+v", res)
	}
}

func TestPruneReadsDaysInTheSchedulesZone(t *testing.T) {
	t.Parallel()
	f, a := s3Pruning(t)
	clear(f.objects)
	// 22:30 and 23:30 UTC on 2025-01-06: one UTC day, two Berlin days.
	for _, slot := range []time.Time{time.Date(2025, 1, 6, 22, 30, 0, 0, time.UTC), time.Date(2025, 1, 6, 23, 30, 0, 0, time.UTC)} {
		f.objects["prod/nightly-"+strconv.FormatInt(slot.Unix()/60, 10)+".db"] = fakeObject{metadata: map[string]string{snapshot.MetadataScheduleUID: scheduleUID}}
	}
	a.cfg.SnapshotName = "nightly-" + strconv.FormatInt(time.Date(2025, 1, 8, 2, 0, 0, 0, time.UTC).Unix()/60, 10)
	a.cfg.Schedule.Retention = &snapshot.RetentionConfig{KeepDaily: 3, TimeZone: "Europe/Berlin"}
	if pruned, err := a.prune(t.Context(), logr.Discard()); err != nil || len(pruned) != 0 {
		t.Errorf("Berlin days: pruned %v, %v; want none", pruned, err)
	}
	a.cfg.Schedule.Retention.TimeZone = ""
	if pruned, err := a.prune(t.Context(), logr.Discard()); err != nil || len(pruned) != 1 {
		t.Errorf("UTC days: pruned %v, %v; want the older file of 2025-01-06", pruned, err)
	}
}
