package restoreagent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/etcd-operator/etcd-operator/internal/agentenv"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// fakeSource serves an artifact from memory and records what was asked of it.
type fakeSource struct {
	data    []byte
	version string
	sidecar *restore.Sidecar
	statErr error
	calls   []string
}

func (f *fakeSource) Stat(context.Context) (artifact, error) {
	f.calls = append(f.calls, "Stat")
	return artifact{Size: int64(len(f.data)), Version: f.version}, f.statErr
}

func (f *fakeSource) Sidecar(context.Context) (restore.Sidecar, error) {
	f.calls = append(f.calls, "Sidecar")
	if f.sidecar == nil {
		return restore.Sidecar{}, nil
	}
	return *f.sidecar, nil
}

func (f *fakeSource) Open(context.Context) (io.ReadCloser, error) {
	f.calls = append(f.calls, "Open")
	return io.NopCloser(bytes.NewReader(f.data)), nil
}

// fakeEtcdutl writes a script that plays `etcdutl snapshot restore`: it records its arguments
// and creates <data-dir>/member/wal/0.wal, or fails as etcdutl does on a bad integrity hash.
func fakeEtcdutl(t *testing.T, fail bool) (path, argsFile string) {
	t.Helper()
	dir := t.TempDir()
	argsFile = filepath.Join(dir, "args")
	body := `echo "$@" > ` + argsFile + `
while [ $# -gt 0 ]; do [ "$1" = --data-dir ] && d="$2"; shift; done
mkdir -p "$d/member/wal" "$d/member/snap" && echo wal > "$d/member/wal/0.wal"
`
	if fail {
		body = `echo '{"level":"info","msg":"restoring snapshot"}'; echo 'Error: snapshot file integrity check failed. 2 errors occurred' >&2; exit 1
`
	}
	path = filepath.Join(dir, "etcdutl")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o700); err != nil {
		t.Fatal(err)
	}
	return path, argsFile
}

func testConfig(t *testing.T, etcdutl string) restore.Config {
	t.Helper()
	return restore.Config{
		DataDir: t.TempDir(), Name: "seed", InitialCluster: "seed=http://seed.c.ns.svc:2380", ClusterToken: "ns-c-uid",
		PeerURL: "http://seed.c.ns.svc:2380", EtcdVersion: "3.6.16", Etcdutl: etcdutl,
		PVC: &restore.PVCSource{Dir: "/backup", Claim: "backups", Path: "etcd/nightly.db"},
	}
}

func run(t *testing.T, cfg restore.Config, src *fakeSource, free int64) (restore.Result, error) {
	t.Helper()
	a := &agent{cfg: cfg, log: logr.Discard(), src: src,
		lookPath:  func(string) (string, error) { return "", errors.New("not in PATH") },
		freeBytes: func(string) (int64, error) { return free, nil }}
	return a.run(t.Context())
}

func digest(data []byte) string {
	return snapshot.FormatChecksum(sha256.Sum256(data))
}

// leftovers lists what the data dir holds besides member/.
func leftovers(t *testing.T, dataDir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Name() != "member" {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestRestoreVerifiesAndMovesMemberIntoPlace: with the sidecar as the reference, the agent
// downloads, checks, runs etcdutl with the seed's identity into the staging folder and leaves
// exactly member/ behind; the result says what the digest was checked against.
func TestRestoreVerifiesAndMovesMemberIntoPlace(t *testing.T) {
	t.Parallel()
	etcdutl, argsFile := fakeEtcdutl(t, false)
	cfg := testConfig(t, etcdutl)
	data := []byte("a snapshot")
	sidecar := restore.Sidecar{Present: true, Content: snapshot.ChecksumFileContent(sha256.Sum256(data), "nightly.db")}
	src := &fakeSource{data: data, version: "3.6.16", sidecar: &sidecar}
	res, err := run(t, cfg, src, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	want := restore.Result{Outcome: restore.OutcomeRestored, URI: "pvc://backups/etcd/nightly.db", SizeBytes: int64(len(data)),
		Checksum: digest(data), Verification: restore.VerifiedBySidecar, SnapshotVersion: "3.6.16"}
	if res != want {
		t.Errorf("result %+v, want %+v", res, want)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "member", "wal", "0.wal")); err != nil {
		t.Errorf("member/ not in place: %v", err)
	}
	if l := leftovers(t, cfg.DataDir); len(l) != 0 {
		t.Errorf("the data dir keeps %v", l)
	}
	args, _ := os.ReadFile(argsFile)
	for _, a := range []string{"snapshot restore " + restore.DownloadFile(cfg.DataDir), "--name seed", "--initial-cluster seed=http://seed.c.ns.svc:2380",
		"--initial-cluster-token ns-c-uid", "--initial-advertise-peer-urls http://seed.c.ns.svc:2380", "--data-dir " + restore.StagingDir(cfg.DataDir)} {
		if !strings.Contains(string(args), a) {
			t.Errorf("etcdutl ran with %q, missing %q", args, a)
		}
	}
	if strings.Contains(string(args), "skip-hash-check") {
		t.Error("etcdutl ran without its integrity-hash check")
	}
}

// TestRestoreRefusals: each refusal comes before the step it saves (no download of a snapshot
// that cannot be restored), leaves no member/ and no staging behind, and carries its reason,
// permanent: running the container again cannot help.
func TestRestoreRefusals(t *testing.T) {
	t.Parallel()
	good, _ := fakeEtcdutl(t, false)
	broken, _ := fakeEtcdutl(t, true)
	data := []byte("a snapshot")
	for name, c := range map[string]struct {
		etcdutl   string
		src       fakeSource
		checksum  string
		free      int64
		reason    snapshot.Reason
		wantCalls string
	}{
		"no etcdutl":  {etcdutl: filepath.Join(t.TempDir(), "etcdutl"), reason: restore.ReasonEtcdutlNotFound},
		"missing":     {src: fakeSource{statErr: snapshot.Failf(restore.ReasonArtifactNotFound, "none")}, reason: restore.ReasonArtifactNotFound, wantCalls: "Stat"},
		"newer minor": {src: fakeSource{data: data, version: "3.7.0"}, reason: restore.ReasonVersionTooNew, wantCalls: "Stat"},
		"no room":     {src: fakeSource{data: data}, free: 100, reason: snapshot.ReasonNoSpace, wantCalls: "Stat"},
		"tampered, against the spec": {src: fakeSource{data: data}, checksum: digest([]byte("another")), reason: restore.ReasonChecksumMismatch,
			wantCalls: "Stat Open"},
		"tampered, against the sidecar": {src: fakeSource{data: data, sidecar: &restore.Sidecar{Present: true,
			Content: snapshot.ChecksumFileContent(sha256.Sum256([]byte("x")), "nightly.db")}}, reason: restore.ReasonChecksumMismatch, wantCalls: "Stat Sidecar Open"},
		"garbled sidecar": {src: fakeSource{data: data, sidecar: &restore.Sidecar{Present: true, Content: []byte("garbage")}},
			reason: restore.ReasonChecksumFileInvalid, wantCalls: "Stat Sidecar"},
		"integrity hash": {etcdutl: broken, src: fakeSource{data: data}, reason: restore.ReasonEtcdutlFailed, wantCalls: "Stat Sidecar Open"},
	} {
		if c.etcdutl == "" {
			c.etcdutl = good
		}
		if c.free == 0 {
			c.free = 1 << 30
		}
		cfg := testConfig(t, c.etcdutl)
		cfg.Checksum = c.checksum
		_, err := run(t, cfg, &c.src, c.free)
		if snapshot.ReasonOf(err) != c.reason || restore.ExitCode(c.reason) != snapshot.ExitPermanent {
			t.Errorf("%s: %v, want reason %s", name, err, c.reason)
		}
		if got := strings.Join(c.src.calls, " "); got != c.wantCalls {
			t.Errorf("%s: the source was asked %q, want %q", name, got, c.wantCalls)
		}
		if _, err := os.Stat(filepath.Join(cfg.DataDir, "member")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: member/ exists after a refusal", name)
		}
		if l := leftovers(t, cfg.DataDir); len(l) != 0 {
			t.Errorf("%s: the data dir keeps %v", name, l)
		}
	}
	if _, err := run(t, testConfig(t, broken), &fakeSource{data: data}, 1<<30); !strings.Contains(err.Error(), "integrity check failed") {
		t.Errorf("etcdutl's own words are not quoted: %v", err)
	}
}

// TestRestoreIsANoOpOnData: a data dir that holds member/ is never touched, whatever the source
// would say; stale staging from an interrupted run is removed before the next restore.
func TestRestoreIsANoOpOnData(t *testing.T) {
	t.Parallel()
	etcdutl, _ := fakeEtcdutl(t, false)
	cfg := testConfig(t, etcdutl)
	if err := os.MkdirAll(filepath.Join(cfg.DataDir, "member", "wal"), 0o700); err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{data: []byte("x")}
	res, err := run(t, cfg, src, 1<<30)
	if err != nil || res.Outcome != restore.OutcomeAlreadyRestored || len(src.calls) != 0 {
		t.Errorf("member/ present: %+v, %v, source asked %v", res, err, src.calls)
	}

	cfg = testConfig(t, etcdutl)
	if err := os.MkdirAll(filepath.Join(restore.StagingDir(cfg.DataDir), "member"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(restore.DownloadFile(cfg.DataDir), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err = run(t, cfg, &fakeSource{data: []byte("x")}, 1<<30)
	if err != nil || res.Outcome != restore.OutcomeRestored || res.Verification != restore.Unverified {
		t.Errorf("after an interrupted run: %+v, %v", res, err)
	}
	if l := leftovers(t, cfg.DataDir); len(l) != 0 {
		t.Errorf("the data dir keeps %v", l)
	}
}

// TestRunReportsThroughTerminationMessage: Run writes the result where the kubelet reads it,
// also when the environment does not parse, and exits with the reason's code.
func TestRunReportsThroughTerminationMessage(t *testing.T) {
	t.Parallel()
	term := filepath.Join(t.TempDir(), "termination-log")
	env := map[string]string{agentenv.EnvTerminationMessagePath: term}
	var log bytes.Buffer
	code := Run(t.Context(), nil, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, &log)
	data, err := os.ReadFile(term)
	if err != nil {
		t.Fatal(err)
	}
	res, err := restore.ParseTerminationMessage(data)
	if err != nil || res.Reason != snapshot.ReasonInvalidConfig || code != snapshot.ExitPermanent || !strings.Contains(res.Message, restore.EnvSource) {
		t.Errorf("exit %d, %+v, %v", code, res, err)
	}
}

// TestResolveEtcdutl: the named path must be an executable file; without one, PATH decides.
func TestResolveEtcdutl(t *testing.T) {
	t.Parallel()
	exe, _ := fakeEtcdutl(t, false)
	plain := filepath.Join(t.TempDir(), "etcdutl")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	inPath := func(string) (string, error) { return "/usr/local/bin/etcdutl", nil }
	for _, c := range []struct {
		path string
		look func(string) (string, error)
		want string
	}{
		{exe, nil, exe},
		{plain, nil, ""},
		{filepath.Dir(exe), nil, ""},
		{"", inPath, "/usr/local/bin/etcdutl"},
		{"", func(string) (string, error) { return "", errors.New("no") }, ""},
	} {
		got, err := resolveEtcdutl(c.path, c.look)
		if got != c.want || (err == nil) != (c.want != "") || (err != nil && snapshot.ReasonOf(err) != restore.ReasonEtcdutlNotFound) {
			t.Errorf("resolveEtcdutl(%q) = %q, %v; want %q", c.path, got, err, c.want)
		}
	}
}
