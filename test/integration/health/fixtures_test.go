package health_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
)

// updateFixtures makes TestTerminationFixtures write what it captured into
// internal/health/testdata instead of only checking it:
//
//	make test GO_TEST_FLAGS='-run TestTerminationFixtures' ... or
//	ETCD_BIN_DIRS=$(go run ./hack/binaries etcd | paste -sd:) \
//	  go test ./test/integration/health -run TestTerminationFixtures -args -update-fixtures
var updateFixtures = flag.Bool("update-fixtures", false, "write captured etcd termination logs into internal/health/testdata")

const (
	// fixtureDir is internal/health/testdata relative to this package.
	fixtureDir = "../../../internal/health/testdata"
	// captureBytes is how much of a failed member's log a fixture keeps: the upper bound of a
	// termination message (kubelet's MaxContainerTerminationMessageLength). What the kubelet
	// actually reads back with FallbackToLogsOnError is smaller (health.TerminationMessageTail);
	// the classifier tests apply that cut.
	captureBytes = 4096
	// exitTimeout bounds how long a failing member may run before it is killed, as a liveness
	// probe would kill a member that never becomes healthy.
	exitTimeout = 20 * time.Second
	// hangTimeout is how long a member that does not exit by itself (cluster ID mismatch) runs
	// before the SIGKILL that stands in for the liveness probe.
	hangTimeout = 8 * time.Second
	// startTimeout bounds a healthy cluster's start.
	startTimeout = time.Minute
	// scrubbedRoot replaces the test's temporary folder in captured logs, so fixtures do not
	// depend on where they were generated.
	scrubbedRoot = "/var/lib/etcd-fixture"
)

// fixtureIndexFile lists, per minor, the captured cases with their exit codes; the classifier's
// unit tests read it (internal/health/fixtures_test.go) to rebuild each container termination.
const fixtureIndexFile = "index.json"

// fixtureIndex is the content of fixtureIndexFile.
type fixtureIndex struct {
	// Version is the exact etcd release the fixtures were captured from.
	Version string `json:"version"`
	// Cases maps a case name (the fixture file's base name) to how that run ended.
	Cases map[string]fixtureEntry `json:"cases"`
}

// fixtureEntry is how one captured run ended.
type fixtureEntry struct {
	// ExitCode is the process's exit code as a container runtime reports it (128+signal when
	// killed).
	ExitCode int `json:"exitCode"`
	// Killed says the process did not exit by itself and was killed, as a liveness probe would.
	Killed bool `json:"killed"`
	// ClusterID is the etcd cluster ID (hex) of the cluster the failing member belonged to,
	// empty for single-member cases that never formed one.
	ClusterID string `json:"clusterID,omitempty"`
	// Class and Pattern are the classification of the kubelet's view of the log when it was
	// captured; the unit tests require the same result.
	Class   string `json:"class"`
	Pattern string `json:"pattern,omitempty"`
}

// fixtureCase produces one fatal etcd exit for real.
type fixtureCase struct {
	name string
	// want lists the classifications accepted for the kubelet's view of the log; the first is
	// the intended one, others are accepted because etcd's shutdown order is not deterministic.
	want []health.FatalClass
	run  func(ctx context.Context, t *testing.T, h *harness) *capture
}

// fixtureCases are the failures the operator must recognise (docs/design/healing.md,
// "Classification": a classified fatal exit). Each reproduces, on loopback, what a Pod would go
// through.
var fixtureCases = []fixtureCase{
	{name: "db-corrupt", want: all(health.ClassDataCorrupt), run: caseDBCorrupt},
	{name: "wal-corrupt", want: all(health.ClassDataCorrupt), run: caseWALCorrupt},
	{name: "db-older-than-snapshot", want: all(health.ClassDataCorrupt), run: caseDBOlderThanSnapshot},
	{name: "wiped-restart-new", want: all(health.ClassDataLost), run: caseWipedRestartNew},
	{name: "wiped-restart-existing", want: all(health.ClassDataLost), run: caseWipedRestartExisting},
	{name: "wiped-restart-after-removal", want: all(health.ClassRemovedFromCluster), run: caseWipedRestartAfterRemoval},
	// etcd prints why it stops (the peers say it was removed) more than 2 KiB before it exits,
	// so the kubelet's tail holds only the shutdown, which sometimes ends with a fatal
	// "listener failed" and sometimes with nothing recognisable, in every pinned minor. The
	// operator learns of the removal from MemberList instead (Classify's removedFromCluster
	// rule), which the classifier's unit tests check with this fixture.
	{name: "restart-after-removal", want: []health.FatalClass{health.ClassNone, health.ClassCrashed}, run: caseRestartAfterRemoval},
	{name: "cluster-id-mismatch", want: all(health.ClassDataLost), run: caseClusterIDMismatch},
	{name: "peer-url-mismatch", want: all(health.ClassMisconfigured), run: casePeerURLMismatch},
	{name: "quota-too-large", want: all(health.ClassMisconfigured), run: caseQuotaTooLarge},
}

func all(c health.FatalClass) []health.FatalClass {
	return []health.FatalClass{c}
}

// TestTerminationFixtures runs every fixture case against every pinned etcd release in
// ETCD_BIN_DIRS and checks that what etcd really printed classifies as intended for its minor.
// With -update-fixtures it also writes the captured logs, and an index of exit codes, into
// internal/health/testdata/<minor>/.
func TestTerminationFixtures(t *testing.T) {
	t.Parallel()
	for _, dir := range etcdBinDirs(t) {
		bin := filepath.Join(dir, "etcd")
		version := etcdVersion(t, bin)
		minor := health.Minor(version)
		t.Run(minor, func(t *testing.T) {
			t.Parallel()
			index := fixtureIndex{Version: version, Cases: map[string]fixtureEntry{}}
			for _, fc := range allFixtureCases() {
				t.Run(fc.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
					defer cancel()
					h := &harness{bin: bin, root: t.TempDir(), minor: minor}
					c := fc.run(ctx, t, h)
					tail := health.TerminationMessageTail(c.log)
					got := health.ClassifyTermination(minor, c.clusterID, tail)
					if !slices.Contains(fc.want, got.Class) {
						t.Errorf("etcd %s, case %s: classified as %q (pattern %q), want one of %q; kubelet's view of the log:\n%s",
							version, fc.name, got.Class, got.Pattern, fc.want, tail)
					}
					index.Cases[fc.name] = fixtureEntry{
						ExitCode: c.exitCode, Killed: c.killed, ClusterID: c.clusterID,
						Class: string(got.Class), Pattern: got.Pattern,
					}
					if *updateFixtures {
						writeFile(t, filepath.Join(fixtureDir, minor, fc.name+".log"), c.log)
					}
				})
			}
			if *updateFixtures && !t.Failed() {
				keepUnrun(t, minor, &index)
				b, err := json.MarshalIndent(index, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(fixtureDir, minor, fixtureIndexFile), append(b, '\n'))
			}
		})
	}
}

// keepUnrun copies into index the cases of the committed index that this run did not capture
// (a -run filter), so that capturing one case does not drop the others.
func keepUnrun(t *testing.T, minor string, index *fixtureIndex) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, minor, fixtureIndexFile))
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	var old fixtureIndex
	if err := json.Unmarshal(b, &old); err != nil {
		t.Fatal(err)
	}
	for name, e := range old.Cases {
		if _, ok := index.Cases[name]; !ok && old.Version == index.Version {
			index.Cases[name] = e
		}
	}
}

func etcdBinDirs(t *testing.T) []string {
	t.Helper()
	if err := etcdproc.CheckBinDirs(); err != nil {
		t.Fatal(err)
	}
	return etcdproc.BinDirs()
}

var versionRE = regexp.MustCompile(`etcd Version: (\d+\.\d+\.\d+)`)

func etcdVersion(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), bin, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", bin, err)
	}
	m := versionRE.FindSubmatch(out)
	if m == nil {
		t.Fatalf("%s --version printed no version:\n%s", bin, out)
	}
	return string(m[1])
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// harness runs etcd processes of one release under one temporary root.
type harness struct {
	bin   string
	root  string
	minor string
	// clusterID is the ID of the last cluster startCluster formed, in hex.
	clusterID string
}

// member is one etcd process's identity: what a Pod and its volume keep across restarts.
type member struct {
	name, clientURL, peerURL, metricsURL, dataDir, logPath string
}

// proc is a running etcd process.
type proc struct {
	m    *member
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// capture is what a failed start left behind.
type capture struct {
	log       []byte
	exitCode  int
	killed    bool
	clusterID string
}

func (h *harness) members(t *testing.T, n int) []*member {
	t.Helper()
	ports := freePorts(t, 3*n)
	ms := make([]*member, n)
	for i := range ms {
		name := fmt.Sprintf("m%d", i)
		dir := filepath.Join(h.root, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		ms[i] = &member{
			name:       name,
			clientURL:  fmt.Sprintf("http://127.0.0.1:%d", ports[3*i]),
			peerURL:    fmt.Sprintf("http://127.0.0.1:%d", ports[3*i+1]),
			metricsURL: fmt.Sprintf("http://127.0.0.1:%d", ports[3*i+2]),
			dataDir:    filepath.Join(dir, "data"),
			logPath:    filepath.Join(dir, "etcd.log"),
		}
	}
	return ms
}

func initialCluster(ms []*member) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.name + "=" + m.peerURL
	}
	return strings.Join(parts, ",")
}

// args renders the flags a Pod would run with (internal/desired.EtcdFlags): identity,
// listeners, bootstrap, and the corruption checks in the spelling of this minor. Logging stays
// at etcd's default (zap, JSON, stderr), which is what a Pod's log, and so its termination
// message, holds.
func (h *harness) args(m *member, cluster, token, state string) []string {
	a := []string{
		"--name=" + m.name,
		"--data-dir=" + m.dataDir,
		"--listen-client-urls=" + m.clientURL,
		"--advertise-client-urls=" + m.clientURL,
		"--listen-peer-urls=" + m.peerURL,
		"--initial-advertise-peer-urls=" + m.peerURL,
		"--listen-metrics-urls=" + m.metricsURL,
		"--initial-cluster=" + cluster,
		"--initial-cluster-token=" + token,
		"--initial-cluster-state=" + state,
	}
	if h.minor == "3.5" {
		return append(a, "--experimental-initial-corrupt-check=true", "--experimental-compact-hash-check-enabled=true")
	}
	return append(a, "--feature-gates=InitialCorruptCheck=true,CompactHashCheck=true")
}

func (h *harness) start(t *testing.T, m *member, args []string) *proc {
	t.Helper()
	// Each start gets a fresh log: a fixture is the output of the failing start only, as a
	// container's log is per container instance.
	f, err := os.Create(m.logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(h.bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", m.name, err)
	}
	p := &proc{m: m, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop ends a healthy member gracefully, as a Pod deletion would.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.kill()
	}
}

// startCluster starts n members as a new cluster and waits until all are healthy.
func (h *harness) startCluster(ctx context.Context, t *testing.T, n int) ([]*member, []*proc, string) {
	t.Helper()
	ms := h.members(t, n)
	token := "fixture-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ps := make([]*proc, n)
	for i, m := range ms {
		ps[i] = h.start(t, m, h.args(m, initialCluster(ms), token, "new"))
	}
	for _, p := range ps {
		waitHealthy(ctx, t, p)
	}
	cli := dial(t, ms)
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := cli.MemberList(lctx)
	if err != nil {
		t.Fatalf("listing members: %v", err)
	}
	h.clusterID = strconv.FormatUint(list.Header.ClusterId, 16)
	return ms, ps, token
}

// waitExit waits for a failing member to exit, or kills it after timeout, and returns its log
// with the temporary folder scrubbed and cut to captureBytes.
func (h *harness) waitExit(t *testing.T, p *proc, timeout time.Duration) *capture {
	t.Helper()
	c := &capture{clusterID: h.clusterID}
	select {
	case <-p.done:
	case <-time.After(timeout):
		c.killed = true
		p.kill()
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
	case errors.As(p.err, &ee):
		c.exitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			// A container killed by a signal reports 128+signal, as the runtime does.
			c.exitCode = 128 + int(ws.Signal())
		}
	default:
		t.Fatalf("waiting for %s: %v", p.m.name, p.err)
	}
	b, err := os.ReadFile(p.m.logPath)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte(h.root), []byte(scrubbedRoot))
	if len(b) > captureBytes {
		b = b[len(b)-captureBytes:]
	}
	c.log = b
	return c
}

func waitHealthy(ctx context.Context, t *testing.T, p *proc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case <-p.done:
			b, _ := os.ReadFile(p.m.logPath)
			t.Fatalf("%s exited while starting: %v\n%s", p.m.name, p.err, tailLines(b, 20))
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.m.metricsURL+"/health", nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := client.Do(req); err == nil {
			var body struct {
				Health string `json:"health"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&body)
			_ = resp.Body.Close()
			if body.Health == "true" {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s did not become healthy: %v", p.m.name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func tailLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func dial(t *testing.T, ms []*member) *clientv3.Client {
	t.Helper()
	eps := make([]string, len(ms))
	for i, m := range ms {
		eps[i] = m.clientURL
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: nil})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// writeKeys commits some data, so that data files hold more than the bootstrap records.
func writeKeys(ctx context.Context, t *testing.T, cli *clientv3.Client, n int) {
	t.Helper()
	for i := range n {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := cli.Put(wctx, fmt.Sprintf("/fixture/%04d", i), strings.Repeat("v", 256))
		cancel()
		if err != nil {
			t.Fatalf("writing key %d: %v", i, err)
		}
	}
}

// removeMember removes m from the cluster through one of the other members.
func removeMember(ctx context.Context, t *testing.T, cli *clientv3.Client, m *member) {
	t.Helper()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := cli.MemberList(rctx)
	if err != nil {
		t.Fatalf("listing members: %v", err)
	}
	for _, mm := range list.Members {
		if mm.Name == m.name {
			if _, err := cli.MemberRemove(rctx, mm.ID); err != nil {
				t.Fatalf("removing %s: %v", m.name, err)
			}
			return
		}
	}
	t.Fatalf("member %s not in the member list", m.name)
}

// freePorts returns n loopback ports below the ephemeral range (etcdproc.FreePorts says why: a
// port of that range can be taken by any outgoing connection before etcd binds it, which once
// failed a fixture with "address already in use").
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports, err := etcdproc.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// caseDBCorrupt overwrites both bbolt meta pages of a stopped single member's
// member/snap/db, as a torn write or a bad disk would, and restarts it: bbolt refuses the file
// (https://github.com/etcd-io/bbolt/blob/main/errors/errors.go, "invalid database").
func caseDBCorrupt(ctx context.Context, t *testing.T, h *harness) *capture {
	t.Helper()
	ms, ps, token := h.startCluster(ctx, t, 1)
	writeKeys(ctx, t, dial(t, ms), 20)
	ps[0].stop(t)
	db := filepath.Join(ms[0].dataDir, "member", "snap", "db")
	f, err := os.OpenFile(db, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 2*4096/4), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	p := h.start(t, ms[0], h.args(ms[0], initialCluster(ms), token, "new"))
	return h.waitExit(t, p, exitTimeout)
}

// caseWALCorrupt flips bytes inside the written part of a stopped single member's WAL and
// restarts it: the WAL's CRC check fails on replay
// (https://github.com/etcd-io/etcd/blob/main/server/storage/wal/wal.go).
func caseWALCorrupt(ctx context.Context, t *testing.T, h *harness) *capture {
	t.Helper()
	ms, ps, token := h.startCluster(ctx, t, 1)
	writeKeys(ctx, t, dial(t, ms), 20)
	ps[0].stop(t)
	wals, err := filepath.Glob(filepath.Join(ms[0].dataDir, "member", "wal", "*.wal"))
	if err != nil || len(wals) == 0 {
		t.Fatalf("no WAL file: %v", err)
	}
	b, err := os.ReadFile(wals[0])
	if err != nil {
		t.Fatal(err)
	}
	// WAL files are preallocated with zeros; corrupt the middle of what was written.
	used := len(bytes.TrimRight(b, "\x00"))
	for i := used / 2; i < used/2+64 && i < used; i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(wals[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	p := h.start(t, ms[0], h.args(ms[0], initialCluster(ms), token, "new"))
	return h.waitExit(t, p, exitTimeout)
}

// caseDBOlderThanSnapshot puts back an old copy of a stopped member's bbolt file after raft
// snapshots were taken past it (a volume restored from an old backup, a lost fsync): etcd finds
// its database behind the newest snapshot and cannot recover it
// (server/etcdserver/bootstrap.go, recoverSnapshot / server/storage/backend.go).
func caseDBOlderThanSnapshot(ctx context.Context, t *testing.T, h *harness) *capture {
	t.Helper()
	ms := h.members(t, 1)
	token := "fixture-snapshot"
	args := append(h.args(ms[0], initialCluster(ms), token, "new"), "--snapshot-count=50")
	p := h.start(t, ms[0], args)
	waitHealthy(ctx, t, p)
	cli := dial(t, ms)
	writeKeys(ctx, t, cli, 5)
	p.stop(t)
	db := filepath.Join(ms[0].dataDir, "member", "snap", "db")
	old, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	p = h.start(t, ms[0], args)
	waitHealthy(ctx, t, p)
	writeKeys(ctx, t, cli, 300)
	p.stop(t)
	if snaps, _ := filepath.Glob(filepath.Join(ms[0].dataDir, "member", "snap", "*.snap")); len(snaps) == 0 {
		t.Fatal("no raft snapshot was taken")
	}
	if err := os.WriteFile(db, old, 0o600); err != nil {
		t.Fatal(err)
	}
	p = h.start(t, ms[0], args)
	return h.waitExit(t, p, exitTimeout)
}

// caseWipedRestartNew wipes a stopped member's data dir and restarts it with the flags it was
// created with (state new): the other members still list it, so etcd refuses to bootstrap it
// again ("member ... has already been bootstrapped").
func caseWipedRestartNew(ctx context.Context, t *testing.T, h *harness) *capture {
	t.Helper()
	ms, ps, token := h.startCluster(ctx, t, 3)
	ps[2].stop(t)
	wipe(t, ms[2])
	p := h.start(t, ms[2], h.args(ms[2], initialCluster(ms), token, "new"))
	return h.waitExit(t, p, exitTimeout)
}

// caseWipedRestartExisting wipes a stopped member's data dir and restarts it with state
// existing while the cluster still lists it (what a member Pod rendered with "existing" does
// after its volume is lost): the leader's commit index is beyond the empty log, and raft panics.
func caseWipedRestartExisting(ctx context.Context, t *testing.T, h *harness) *capture {
	t.Helper()
	ms, ps, token := h.startCluster(ctx, t, 3)
	writeKeys(ctx, t, dial(t, ms[:2]), 20)
	ps[2].stop(t)
	wipe(t, ms[2])
	p := h.start(t, ms[2], h.args(ms[2], initialCluster(ms), token, "existing"))
	return h.waitExit(t, p, exitTimeout)
}

// caseWipedRestartAfterRemoval removes a member from the cluster, wipes its data dir and
// restarts it with state existing and its old --initial-cluster: the cluster it contacts no
// longer matches.
func caseWipedRestartAfterRemoval(ctx context.Context, t *testing.T, h *harness) *capture {
	t.Helper()
	ms, ps, token := h.startCluster(ctx, t, 3)
	ps[2].stop(t)
	removeMember(ctx, t, dial(t, ms[:2]), ms[2])
	wipe(t, ms[2])
	p := h.start(t, ms[2], h.args(ms[2], initialCluster(ms), token, "existing"))
	return h.waitExit(t, p, exitTimeout)
}

// caseRestartAfterRemoval removes a stopped member from the cluster and restarts it with its
// data intact: the peers tell it it was removed, and it stops
// (https://etcd.io/docs/v3.6/op-guide/runtime-configuration/#remove-a-member).
func caseRestartAfterRemoval(ctx context.Context, t *testing.T, h *harness) *capture {
	t.Helper()
	ms, ps, token := h.startCluster(ctx, t, 3)
	ps[2].stop(t)
	removeMember(ctx, t, dial(t, ms[:2]), ms[2])
	p := h.start(t, ms[2], h.args(ms[2], initialCluster(ms), token, "existing"))
	return h.waitExit(t, p, exitTimeout)
}

// caseClusterIDMismatch restarts a wiped member as a new cluster with another token, so it
// forms a cluster ID of its own: the peers reject it, it never becomes healthy, and it is killed
// as a liveness probe would kill it.
func caseClusterIDMismatch(ctx context.Context, t *testing.T, h *harness) *capture {
	t.Helper()
	ms, ps, _ := h.startCluster(ctx, t, 3)
	ps[2].stop(t)
	wipe(t, ms[2])
	p := h.start(t, ms[2], h.args(ms[2], initialCluster(ms), "another-token", "new"))
	return h.waitExit(t, p, hangTimeout)
}

// casePeerURLMismatch starts a member whose advertised peer URL is not the one
// --initial-cluster gives for its name: a configuration error, not a data problem.
func casePeerURLMismatch(_ context.Context, t *testing.T, h *harness) *capture {
	t.Helper()
	ms := h.members(t, 2)
	wrong := *ms[0]
	wrong.peerURL = ms[1].peerURL
	p := h.start(t, ms[0], h.args(ms[0], initialCluster([]*member{&wrong}), "fixture", "new"))
	return h.waitExit(t, p, exitTimeout)
}

// caseQuotaTooLarge starts a member whose --quota-backend-bytes (300 TiB) is more than bbolt can
// map: etcd panics "failed to open database" like for a corrupt file, but with "mmap too large",
// a configuration error that a replacement would only repeat (e2e finding 11).
func caseQuotaTooLarge(_ context.Context, t *testing.T, h *harness) *capture {
	t.Helper()
	ms := h.members(t, 1)
	args := append(h.args(ms[0], initialCluster(ms), "fixture", "new"), "--quota-backend-bytes=329853488332800")
	p := h.start(t, ms[0], args)
	return h.waitExit(t, p, exitTimeout)
}

func wipe(t *testing.T, m *member) {
	t.Helper()
	if err := os.RemoveAll(m.dataDir); err != nil {
		t.Fatal(err)
	}
}
