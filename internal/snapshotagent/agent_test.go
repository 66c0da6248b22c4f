package snapshotagent

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

const (
	leaderEP   = "https://m0:2379"
	followerEP = "https://m1:2379"
	learnerEP  = "https://m2:2379"
	ourUID     = "uid-ours"
)

// healthyEtcd is a three-member cluster whose m0 leads and whose stream is valid.
func healthyEtcd(streamSize int) *fakeEtcd {
	return &fakeEtcd{
		statuses: map[string]etcdclient.Status{
			leaderEP:   {ID: 1, Leader: 1, Version: "3.6.16", Revision: 500, DBSize: int64(streamSize)},
			followerEP: {ID: 2, Leader: 1, Version: "3.6.15", Revision: 500, DBSize: int64(streamSize)},
			learnerEP:  {ID: 3, Leader: 1, Version: "3.6.16", Revision: 400, IsLearner: true},
		},
		stream: streamOf(streamSize, 7),
	}
}

// pvcAgent is an agent writing to a fresh folder, standing for the mounted claim.
func pvcAgent(t *testing.T, f *fakeEtcd, uid string) (*agent, *pvcDestination) {
	t.Helper()
	root := t.TempDir()
	dest := newPVCDestination(snapshot.PVCConfig{Dir: root, Claim: "backups", SubPath: "etcd/daily"}, "nightly", uid, "")
	cfg := snapshot.Config{
		Endpoints:   []string{learnerEP, leaderEP, followerEP},
		DialTimeout: time.Second, SnapshotName: "nightly", SnapshotUID: uid,
	}
	return &agent{cfg: cfg, log: logr.Discard(), dial: f.dialer(), dest: dest}, dest
}

func listFolder(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestAgentStoresOnPVC(t *testing.T) {
	t.Parallel()
	f := healthyEtcd(200_000)
	a, dest := pvcAgent(t, f, ourUID)
	res, err := a.run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(f.stream)
	if res.URI != "pvc://backups/etcd/daily/nightly.db" || res.SizeBytes != int64(len(f.stream)) ||
		res.Checksum != snapshot.FormatChecksum(sum) || res.EtcdVersion != "3.6.15" || res.Revision != 500 || res.StreamMillis <= 0 {
		t.Errorf("result = %+v", res)
	}
	// The follower served: the leader has more to do, the learner may lag.
	if !f.called("Snapshot "+followerEP) || !f.closed {
		t.Errorf("calls %v, closed %v; want the follower's snapshot and a closed client", f.calls, f.closed)
	}
	want := []string{"nightly.db", "nightly.db.sha256", "nightly.db.uid", "nightly.db.version"}
	if got := listFolder(t, dest.folder); !slices.Equal(got, want) {
		t.Errorf("folder holds %v, want %v", got, want)
	}
	if readFile(t, dest.path("")) != string(f.stream) {
		t.Error("the artifact differs from the stream")
	}
	if got := readFile(t, dest.path(".sha256")); got != string(snapshot.ChecksumFileContent(sum, "nightly.db")) {
		t.Errorf(".sha256 = %q", got)
	}
	if got := readFile(t, dest.path(".uid")) + readFile(t, dest.path(".version")); got != ourUID+"\n3.6.15\n" {
		t.Errorf(".uid and .version = %q", got)
	}
	if fi, err := os.Stat(dest.path("")); err != nil || fi.Mode().Perm() != pvcFileMode {
		t.Errorf("artifact mode: %v, %v", fi.Mode(), err)
	}
}

func TestAgentOverwriteGuardOnPVC(t *testing.T) {
	t.Parallel()
	// Another snapshot's artifact is never touched, and etcd is not even asked.
	f := healthyEtcd(10_000)
	a, dest := pvcAgent(t, f, ourUID)
	if err := os.MkdirAll(dest.folder, 0o700); err != nil {
		t.Fatal(err)
	}
	for path, content := range map[string]string{dest.path(""): "theirs", dest.path(".uid"): "uid-theirs\n"} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, err := a.run(t.Context())
	if snapshot.ReasonOf(err) != snapshot.ReasonArtifactExists || !strings.Contains(err.Error(), "uid-theirs") {
		t.Errorf("run = %v, want ArtifactExists naming the other UID", err)
	}
	if len(f.calls) != 0 || readFile(t, dest.path("")) != "theirs" {
		t.Errorf("etcd calls %v; artifact %q: want none and the artifact intact", f.calls, readFile(t, dest.path("")))
	}
	// Without a .uid the artifact's owner is unknown: refused as well.
	if err := os.Remove(dest.path(".uid")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.run(t.Context()); snapshot.ReasonOf(err) != snapshot.ReasonArtifactExists {
		t.Errorf("run without .uid = %v, want ArtifactExists", err)
	}
	// Our own earlier artifact is replaced, its stale siblings with it.
	for path, content := range map[string]string{dest.path(".uid"): ourUID + "\n", dest.path(".sha256"): "stale"} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.run(t.Context()); err != nil {
		t.Fatalf("retry over our own artifact: %v", err)
	}
	if readFile(t, dest.path("")) != string(f.stream) || strings.Contains(readFile(t, dest.path(".sha256")), "stale") {
		t.Error("our own artifact or its sidecar was not replaced")
	}
}

// TestAgentFullDisk: a write that fails with ENOSPC leaves no artifact and no temporary file,
// and the reason is NoSpace; so does a volume too small from the start, before etcd streams.
func TestAgentFullDisk(t *testing.T) {
	t.Parallel()
	f := healthyEtcd(300_000)
	a, dest := pvcAgent(t, f, ourUID)
	dest.wrapWriter = func(w io.Writer) io.Writer { return &failingWriter{w: w, left: 100_000, err: syscall.ENOSPC} }
	_, err := a.run(t.Context())
	if snapshot.ReasonOf(err) != snapshot.ReasonNoSpace || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("run = %v, want NoSpace", err)
	}
	if got := listFolder(t, dest.folder); !slices.Equal(got, []string{"nightly.db.uid"}) {
		t.Errorf("folder holds %v after a full disk, want only the claim of the name (.uid)", got)
	}

	g := healthyEtcd(300_000)
	b, small := pvcAgent(t, g, ourUID)
	small.freeBytes = func(string) (int64, error) { return 1000, nil }
	_, err = b.run(t.Context())
	if snapshot.ReasonOf(err) != snapshot.ReasonNoSpace {
		t.Fatalf("run on a small volume = %v, want NoSpace", err)
	}
	if g.called("Snapshot") {
		t.Error("the snapshot was streamed although the volume could not hold it")
	}
}

// TestAgentBrokenStream: a stream that breaks off (a member restarting) stores nothing.
func TestAgentBrokenStream(t *testing.T) {
	t.Parallel()
	f := healthyEtcd(300_000)
	f.failAfter = 150_000
	a, dest := pvcAgent(t, f, ourUID)
	_, err := a.run(t.Context())
	if snapshot.ReasonOf(err) != snapshot.ReasonSnapshotStreamFailed || !errors.Is(err, etcdclient.ErrUnavailable) {
		t.Fatalf("run = %v, want SnapshotStreamFailed", err)
	}
	if _, err := os.Stat(dest.path("")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an artifact exists after a broken stream: %v", err)
	}
	if got := listFolder(t, dest.folder); !slices.Equal(got, []string{"nightly.db.uid"}) {
		t.Errorf("folder holds %v", got)
	}
}

func TestPickMember(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		endpoints []string
		down      []string
		want      string
	}{
		{"a follower before the leader", []string{leaderEP, followerEP}, nil, followerEP},
		{"the leader when no follower answers", []string{learnerEP, leaderEP, followerEP}, []string{followerEP}, leaderEP},
		{"never a learner", []string{learnerEP}, nil, ""},
		{"nobody", []string{leaderEP, followerEP}, []string{leaderEP, followerEP}, ""},
	}
	for _, c := range cases {
		f := healthyEtcd(1)
		f.errs = map[string]error{}
		for _, ep := range c.down {
			f.errs[ep] = etcdclient.NewError("Status", etcdclient.ErrUnavailable)
		}
		st, err := pickMember(t.Context(), f, c.endpoints)
		if st.Endpoint != c.want || (c.want == "") != (err != nil) {
			t.Errorf("%s: picked %q, %v; want %q", c.name, st.Endpoint, err, c.want)
		}
	}
}

func TestConnect(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	// Rejected credentials end the wait at once.
	denied := healthyEtcd(1)
	denied.errs = map[string]error{leaderEP: etcdclient.NewError("Status", etcdclient.ErrAuthFailed)}
	start := time.Now()
	_, err := connect(ctx, denied.dialer(), []string{leaderEP}, time.Minute)
	if snapshot.ReasonOf(err) != snapshot.ReasonEtcdAuthFailed || time.Since(start) > 10*time.Second {
		t.Errorf("connect with bad credentials = %v after %s, want EtcdAuthFailed at once", err, time.Since(start))
	}
	// Nobody answering is EtcdUnreachable once the dial timeout passes.
	failing := func(context.Context) (etcdAPI, error) {
		return nil, etcdclient.NewError("dial", etcdclient.ErrUnavailable)
	}
	_, err = connect(ctx, failing, []string{leaderEP}, 50*time.Millisecond)
	if snapshot.ReasonOf(err) != snapshot.ReasonEtcdUnreachable || !errors.Is(err, etcdclient.ErrUnavailable) {
		t.Errorf("connect to nobody = %v, want EtcdUnreachable with the last error", err)
	}
	// A dial that fails first and then succeeds is retried within the timeout.
	f := healthyEtcd(1)
	attempts := 0
	flaky := func(context.Context) (etcdAPI, error) {
		if attempts++; attempts == 1 {
			return nil, errInjected
		}
		return f, nil
	}
	if src, err := connect(ctx, flaky, []string{leaderEP}, 5*time.Second); err != nil || src.status.Endpoint != leaderEP {
		t.Errorf("connect after a failed dial = %+v, %v", src.status, err)
	}
}

func TestRevisionBounds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		bounds  revisionBounds
		scanned int64
		want    int64
	}{
		{revisionBounds{100, 100}, 100, 100},
		{revisionBounds{100, 120}, 113, 113}, // exact, from the data
		{revisionBounds{100, 120}, 0, 100},   // nothing read: the lower bound
		{revisionBounds{100, 120}, 9000, 120},
		{revisionBounds{100, 0}, 9000, 9000}, // no upper bound known
		{revisionBounds{100, 0}, 50, 100},
	}
	for _, c := range cases {
		if got := c.bounds.pick(c.scanned); got != c.want {
			t.Errorf("%+v.pick(%d) = %d, want %d", c.bounds, c.scanned, got, c.want)
		}
	}
}

// failingWriter passes left bytes, then fails with err.
type failingWriter struct {
	w    io.Writer
	left int
	err  error
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.left {
		n, _ := f.w.Write(p[:f.left])
		f.left = 0
		return n, &os.PathError{Op: "write", Path: "tmp", Err: f.err}
	}
	f.left -= len(p)
	return f.w.Write(p)
}
