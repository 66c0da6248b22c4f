package snapshotagent_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"github.com/etcd-operator/etcd-operator/internal/agentenv"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
	"github.com/etcd-operator/etcd-operator/test/utils/s3server"
)

const (
	// buildTimeout bounds linking the agent's binary on a loaded machine.
	buildTimeout = 5 * time.Minute
)

// builtDir holds the agent's binary once buildOnce ran; TestMain removes it.
var builtDir string

// buildOnce builds the agent's binary, the one snapshot Jobs run (cmd/etcd-snapshot-agent), at
// most once per test binary.
var buildOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "snapshotagent-bin-")
	if err != nil {
		return "", err
	}
	builtDir = dir
	path := filepath.Join(dir, "etcd-snapshot-agent")
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	// `go test` puts $GOROOT/bin first in PATH, so this is the toolchain running the tests.
	out, err := exec.CommandContext(ctx, "go", "build", "-o", path, "../../../cmd/etcd-snapshot-agent").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return path, nil
})

// processFigures is what a process used, from its rusage, /proc and the runtime's GC trace.
type processFigures struct {
	elapsed time.Duration
	// maxRSS is the peak resident set (VmHWM, sampled: rusage's maxrss would include the test
	// process it was forked from), which includes the pages of the binary itself.
	maxRSS int64
	// maxAnon is the largest anonymous resident set sampled (RssAnon): heap, stacks and
	// runtime, without the binary's file-backed pages, which the kernel can drop.
	maxAnon int64
	// maxCached is the largest part of the files matching the cache glob found in the page
	// cache, which Linux charges to the writer's cgroup.
	maxCached int64
	// peakHeap is the largest heap a GC cycle saw (0 when not traced).
	peakHeap   int64
	stderrTail string
}

// memorySamplePeriod spaces the reads of /proc/<pid>/status while a measured process runs.
// VmHWM is a high-water mark, so only its last few milliseconds can be missed.
const memorySamplePeriod = 5 * time.Millisecond

// runMeasured runs cmd to completion and samples its peak resident set and peak anonymous
// memory; when GODEBUG asks for gctrace it also reads its peak heap.
func runMeasured(t *testing.T, cmd *exec.Cmd, cacheGlob string) processFigures {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var f processFigures
	stop := make(chan struct{})
	sampled := make(chan [3]int64)
	go func() {
		var hwm, anon, cached int64
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			hwm, anon = max(hwm, procStatusBytes(status, "VmHWM:")), max(anon, procStatusBytes(status, "RssAnon:"))
			if cacheGlob != "" {
				cached = max(cached, cachedBytes(cacheGlob))
			}
			select {
			case <-stop:
				sampled <- [3]int64{hwm, anon, cached}
				return
			case <-time.After(memorySamplePeriod):
			}
		}
	}()
	err := cmd.Wait()
	close(stop)
	peaks := <-sampled
	f.maxRSS, f.maxAnon, f.maxCached = peaks[0], peaks[1], peaks[2]
	f.elapsed, f.stderrTail = time.Since(start), tail(stderr.String(), 2000)
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd.Path, err, f.stderrTail)
	}
	f.peakHeap = peakHeapFromGCTrace(stderr.String())
	return f
}

// procStatusBytes reads one "<field> <n> kB" line of /proc/<pid>/status; 0 once the process is
// gone.
func procStatusBytes(path, field string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// gcLine matches the heap sizes of a gctrace line: "... 4->5->1 MB, 5 MB goal ...".
var gcLine = regexp.MustCompile(`(\d+)->(\d+)->(\d+) MB`)

func peakHeapFromGCTrace(trace string) int64 {
	var peak int64
	sc := bufio.NewScanner(strings.NewReader(trace))
	for sc.Scan() {
		for _, m := range gcLine.FindAllStringSubmatch(sc.Text(), -1) {
			for _, n := range m[1:3] {
				mb, _ := strconv.ParseInt(n, 10, 64)
				peak = max(peak, mb<<20)
			}
		}
	}
	return peak
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

// writeLarge fills the cluster with about size bytes of values, in requests of 1 MiB.
func writeLarge(ctx context.Context, t *testing.T, cli *clientv3.Client, size int) {
	t.Helper()
	const valueSize, perTxn = 100 << 10, 10
	value := strings.Repeat("v", valueSize)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for txn := range size / (valueSize * perTxn) {
		g.Go(func() error {
			ops := make([]clientv3.Op, perTxn)
			for i := range ops {
				ops[i] = clientv3.OpPut(fmt.Sprintf("large/%05d/%02d", txn, i), value)
			}
			_, err := cli.Txn(ctx).Then(ops...).Commit()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestAgentMemoryStaysSmall runs the real binary (`etcd-snapshot-agent`) on databases
// of two sizes to a PVC folder, and of the larger size to S3, and reports its peak memory next
// to `etcdctl snapshot save` of the same database. Memory is measured, not held to the issue's
// 64 MiB target here (machines differ), but the agent's anonymous memory must not grow with the
// database, a peak of half the database or more means it holds the snapshot, and more than
// dropBehindWindow of the artifact left in the page cache means the PVC writer lets the cache
// grow: each fails the test. The runs are sequential so that they do not disturb each other.
func TestAgentMemoryStaysSmall(t *testing.T) { //nolint:tparallel // the measured runs must not overlap each other
	t.Parallel()
	if testing.Short() {
		t.Skip("writes 576 MiB into etcd")
	}
	bin, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	var small processFigures
	for _, size := range []int{64 << 20, 256 << 20} {
		t.Run(fmt.Sprintf("pvc %d MiB", size>>20), func(t *testing.T) {
			got, res := measureSnapshot(t, bin, size, false)
			checkMemory(t, got, res)
			if small.maxAnon > 0 && got.maxAnon > small.maxAnon+16<<20 {
				t.Errorf("anonymous memory grew from %.1f MiB to %.1f MiB with the database", mib(small.maxAnon), mib(got.maxAnon))
			}
			small = got
		})
	}
	t.Run("s3 256 MiB", func(t *testing.T) {
		got, res := measureSnapshot(t, bin, 256<<20, true)
		checkMemory(t, got, res)
	})
}

func checkMemory(t *testing.T, got processFigures, res snapshot.Result) {
	t.Helper()
	if res.SizeBytes > 128<<20 && got.maxRSS >= res.SizeBytes/2 {
		t.Errorf("peak RSS %.1f MiB for a %.0f MiB snapshot: the agent holds the snapshot in memory", mib(got.maxRSS), mib(res.SizeBytes))
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// measureSnapshot snapshots a fresh cluster holding about size bytes with the agent binary, to
// a PVC folder or to a real S3 server, and with etcdctl to a local file, and logs both.
func measureSnapshot(t *testing.T, bin string, size int, toS3 bool) (processFigures, snapshot.Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*testTimeout)
	defer cancel()
	var srv *s3server.Server
	if toS3 {
		srv = s3server.StartForTest(t, s3server.Options{})
	}
	c := startCluster(ctx, t, "3.6", etcdproc.Options{})
	writeLarge(ctx, t, client(t, c, "", ""), size)
	etcdctlDir, _ := etcdproc.RequireRelease(t, "3.6")
	etcdctlSave := func() *exec.Cmd {
		return exec.CommandContext(ctx, filepath.Join(etcdctlDir, "etcdctl"), "--endpoints", c.Members[0].ClientURL,
			"snapshot", "save", filepath.Join(t.TempDir(), "etcdctl.db"))
	}
	// The first snapshot after the fill is measurably slower whichever program takes it: take
	// one unmeasured, so that the agent and etcdctl are compared on equal terms.
	if out, err := etcdctlSave().CombinedOutput(); err != nil {
		t.Fatalf("etcdctl snapshot save: %v\n%s", err, out)
	}

	env := pvcEnv(c, t.TempDir(), "large", "uid-large")
	// The artifact is written as a hidden temporary file, renamed once complete.
	cacheGlob := filepath.Join(filepath.Dir(artifactPath(env, "large")), ".large.db.*.tmp")
	if toS3 {
		env, cacheGlob = s3Env(c, srv, srv.CreateBucketForTest(t), "large", "uid-large"), ""
	}
	env[agentenv.EnvTerminationMessagePath] = filepath.Join(t.TempDir(), "termination-log")
	agent := exec.CommandContext(ctx, bin)
	agent.Env = []string{"GODEBUG=gctrace=1"}
	for k, v := range env {
		agent.Env = append(agent.Env, k+"="+v)
	}
	got := runMeasured(t, agent, cacheGlob)
	data, err := os.ReadFile(env[agentenv.EnvTerminationMessagePath])
	if err != nil {
		t.Fatal(err)
	}
	res, err := snapshot.ParseTerminationMessage(data)
	if err != nil || res.Failed() {
		t.Fatalf("agent result %s: %v\n%s", data, err, got.stderrTail)
	}
	if !toS3 {
		if cached := residentBytes(t, artifactPath(env, "large")); cached > dropBehindWindow {
			t.Errorf("%.1f MiB of the artifact stayed in the page cache, which Linux charges to the Job's memory", mib(cached))
		}
		checkArtifact(t, artifactPath(env, "large"), res)
	}

	reportFigures(t, res, got, runMeasured(t, etcdctlSave(), ""))
	return got, res
}

// reportFigures logs what the agent and etcdctl used, and checks the peak the agent reported
// against the one sampled.
func reportFigures(t *testing.T, res snapshot.Result, got, ref processFigures) {
	t.Helper()
	// The e2e timing report takes the agent's peak from its own result: it must say what the
	// sampling here sees.
	if diff := res.PeakRSSBytes - got.maxRSS; res.PeakRSSBytes <= 0 || diff > peakReportSlack || diff < -peakReportSlack {
		t.Errorf("the agent reported a peak RSS of %.1f MiB; sampled %.1f MiB", mib(res.PeakRSSBytes), mib(got.maxRSS))
	}
	rate := func(d time.Duration) float64 { return mib(res.SizeBytes) / d.Seconds() }
	stream := time.Duration(res.StreamMillis) * time.Millisecond
	var took time.Duration
	if m := etcdctlTook.FindStringSubmatch(ref.stderrTail); m != nil {
		took, _ = time.ParseDuration(m[1])
	}
	t.Logf("snapshot of %.0f MiB to %s: agent %.2fs, streamed in %.2fs (%.0f MiB/s), with peak RSS %.1f MiB (reported %.1f MiB), "+
		"of which anonymous %.1f MiB (heap %.0f MiB; the rest is the binary's own pages), at most %.1f MiB of the artifact in the page cache; "+
		"etcdctl snapshot save to a local file %.2fs, took %.2fs (%.0f MiB/s), peak RSS %.1f MiB",
		mib(res.SizeBytes), res.URI[:strings.Index(res.URI, ":")], got.elapsed.Seconds(), stream.Seconds(), rate(stream),
		mib(got.maxRSS), mib(res.PeakRSSBytes), mib(got.maxAnon), mib(got.peakHeap), mib(got.maxCached),
		ref.elapsed.Seconds(), took.Seconds(), rate(took), mib(ref.maxRSS))
}

// etcdctlTook matches the "took" of etcdctl's "fetched snapshot" log line: from opening the
// stream to the file synced, what the agent reports as streamMillis.
var etcdctlTook = regexp.MustCompile(`"msg":"fetched snapshot".*"took":"([^"]+)"`)

// peakReportSlack is how far the peak the agent reports may be from the one sampled here: the
// sampling misses the last few milliseconds before the report, the report the exit.
const peakReportSlack = 8 << 20

// dropBehindWindow is the agent's (internal/agentio, DropBehind): no more than this may stay cached once the artifact is
// stored.
const dropBehindWindow = 8 << 20

// residentBytes is how much of the file at path is in the page cache.
func residentBytes(t *testing.T, path string) int64 {
	t.Helper()
	n, err := fileCached(path)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// cachedBytes is how much of the files matching glob is in the page cache; files that vanish
// while it looks count as 0.
func cachedBytes(glob string) int64 {
	paths, _ := filepath.Glob(glob)
	var total int64
	for _, p := range paths {
		n, _ := fileCached(p)
		total += n
	}
	return total
}

// fileCached counts the file's pages in the page cache (mmap and mincore).
func fileCached(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return 0, err
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, err
	}
	defer func() { _ = unix.Munmap(data) }()
	page := os.Getpagesize()
	vec := make([]byte, (len(data)+page-1)/page)
	//nolint:gosec // G103: mincore needs the mapping's address; x/sys/unix has no wrapper for it.
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		return 0, errno
	}
	var resident int64
	for _, v := range vec {
		resident += int64(v & 1)
	}
	return resident * int64(page), nil
}
