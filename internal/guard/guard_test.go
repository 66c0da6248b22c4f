package guard

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests run the guard as a real process: the test binary re-executes itself as etcd-guard
// when this variable is set, so signals and exit codes are those a container would see.
const runAsGuard = "ETCD_GUARD_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runAsGuard) == "1" {
		os.Exit(Main(os.Args[1:], os.Stderr))
	}
	os.Exit(m.Run())
}

// guardProcess returns the command that runs etcd-guard with args.
func guardProcess(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runAsGuard+"=1")
	return cmd
}

func writeWAL(t *testing.T, dataDir string) {
	t.Helper()
	wal := filepath.Join(dataDir, "member", "wal")
	if err := os.MkdirAll(wal, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wal, "0000000000000000-0000000000000000.wal"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		wal      bool
		marker   bool
		expected bool
		want     string // "" allows the start; otherwise the reason of the refusal
	}{
		{name: "first start of a new member", want: ""},
		{name: "data present", wal: true, expected: true, marker: true, want: ""},
		{name: "operator expected data", expected: true, want: ExpectedByOperator},
		{name: "this Pod saw data", marker: true, want: ExpectedByPod},
		{name: "both", marker: true, expected: true, want: ExpectedByOperator},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			data, marker := filepath.Join(dir, "data"), filepath.Join(dir, "seen")
			if tc.wal {
				writeWAL(t, data)
			}
			if tc.marker {
				if err := MarkSeen(marker, data); err != nil {
					t.Fatal(err)
				}
			}
			err := Check(data, marker, tc.expected)
			var lost *DataLostError
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check refused: %v", err)
			case tc.want != "" && !errors.As(err, &lost):
				t.Fatalf("Check = %v, want a DataLostError", err)
			case tc.want != "" && lost.Reason != tc.want:
				t.Fatalf("reason %q, want %q", lost.Reason, tc.want)
			}
		})
	}
}

// A data dir with only a snapshot but no WAL is what etcd itself would start as a new member.
func TestHasDataNeedsTheWAL(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "member", "snap"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "member", "snap", "db"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if has, err := HasData(dir); err != nil || has {
		t.Fatalf("HasData = %v, %v; want false, nil", has, err)
	}
	writeWAL(t, dir)
	if has, err := HasData(dir); err != nil || !has {
		t.Fatalf("HasData = %v, %v; want true, nil", has, err)
	}
}

// The scenario the guard exists for: etcd's first start in a Pod writes its WAL, the data dir is
// emptied later, and the next start in the same Pod is refused although the operator did not
// expect data when it built the Pod.
func TestRefusesWipeAfterFirstStartInThePod(t *testing.T) {
	dir := t.TempDir()
	data, marker, termLog := filepath.Join(dir, "data"), filepath.Join(dir, "seen"), filepath.Join(dir, "termination-log")
	args := []string{CommandRun, "--" + FlagDataDir, data, "--" + FlagMarker, marker, "--" + FlagTerminationLog, termLog, "--"}

	// Stands in for etcd: writes a WAL, lives long enough for the guard to see it, exits 0.
	fakeEtcd := "mkdir -p " + data + "/member/wal && touch " + data + "/member/wal/0.wal && sleep 0.5"
	first := guardProcess(t, append(args, "/bin/sh", "-c", fakeEtcd)...)
	if out, err := first.CombinedOutput(); err != nil {
		t.Fatalf("first start: %v\n%s", err, out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the first start did not record the marker: %v", err)
	}

	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	second := guardProcess(t, append(args, "/bin/sh", "-c", "touch "+dir+"/etcd-ran")...)
	out, err := second.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("second start: err %v, want exit code 1\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd-ran")); err == nil {
		t.Fatal("etcd was started on the emptied data dir")
	}
	msg, err := os.ReadFile(termLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{RefusalPrefix, data, ExpectedByPod} {
		if !strings.Contains(string(msg), want) || !strings.Contains(string(out), want) {
			t.Errorf("termination log %q / stderr %q lacks %q", msg, out, want)
		}
	}
}

func TestExitCodeIsEtcds(t *testing.T) {
	dir := t.TempDir()
	cmd := guardProcess(t, CommandRun, "--"+FlagDataDir, dir, "--"+FlagMarker, filepath.Join(dir, "seen"), "--", "/bin/sh", "-c", "exit 3")
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("err %v, want exit code 3", err)
	}
}

// The kubelet stops a container with SIGTERM to its first process, the guard; etcd must get it
// (it hands leadership over before exiting), and the guard must end the way etcd did.
func TestForwardsSIGTERM(t *testing.T) {
	dir := t.TempDir()
	// The child says "trap-set" on its stdout, which is the guard's, once its trap is installed.
	// The guard has subscribed to the signals before it started the child, so from then on a
	// SIGTERM to the guard reaches a child that handles it.
	cmd := guardProcess(t, CommandRun, "--"+FlagDataDir, dir, "--"+FlagMarker, filepath.Join(dir, "seen"),
		"--", "/bin/sh", "-c", "trap 'echo got-term; exit 42' TERM; echo trap-set; while :; do sleep 0.05; done")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// A process group of its own, so that the timeout below kills the child too: an orphaned child
	// would keep the stdout pipe open and the reads would never end.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Bounds the whole exchange: a child that never says "trap-set" or never exits is killed, which
	// ends the reads below with what it printed so far.
	killer := time.AfterFunc(forwardTimeout, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer killer.Stop()

	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); line != "trap-set\n" {
		_ = cmd.Wait()
		t.Fatalf("the child did not report its trap within %s: read %q, %v\n%s", forwardTimeout, line, err, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, readErr := io.ReadAll(out)
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 42 {
		t.Fatalf("err %v, want exit code 42 (the child's)\nstdout after trap-set: %q (%v)\n%s", err, rest, readErr, stderr.String())
	}
	if !strings.Contains(string(rest), "got-term") {
		t.Fatalf("the child never saw SIGTERM: stdout after trap-set %q (%v)\n%s", rest, readErr, stderr.String())
	}
}

// forwardTimeout bounds TestForwardsSIGTERM; the exchange takes milliseconds.
const forwardTimeout = 30 * time.Second

func TestInstall(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "etcd-guard")
	if out, err := guardProcess(t, CommandInstall, dest).CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	self, _ := os.ReadFile(os.Args[0])
	got, err := os.ReadFile(dest)
	if err != nil || !bytes.Equal(got, self) {
		t.Fatalf("installed copy differs from the executable (err %v)", err)
	}
	if fi, _ := os.Stat(dest); fi.Mode().Perm()&0o100 == 0 {
		t.Fatalf("installed copy is not executable: %v", fi.Mode())
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{nil, {"frobnicate"}, {CommandInstall}, {CommandRun, "--", "etcd"}, {CommandRun, "--data-dir", "/x", "--marker", "/y"}} {
		var stderr bytes.Buffer
		if code := Main(args, &stderr); code != 2 {
			t.Errorf("Main(%q) = %d, want 2", args, code)
		}
		if stderr.Len() == 0 {
			t.Errorf("Main(%q) said nothing", args)
		}
	}
}

// A long-running etcd gets its marker while it runs, not only when it stops: the Pod may be
// killed with SIGKILL at any time after the WAL exists.
func TestMarksWhileEtcdRuns(t *testing.T) {
	dir := t.TempDir()
	data, marker := filepath.Join(dir, "data"), filepath.Join(dir, "seen")
	// Stands in for etcd: writes a WAL, then waits up to 10 s for the marker; exit 9 if none came.
	fakeEtcd := "mkdir -p " + data + "/member/wal && touch " + data + "/member/wal/0.wal && " +
		"for i in $(seq 200); do [ -f " + marker + " ] && exit 0; sleep 0.05; done; exit 9"
	out, err := guardProcess(t, CommandRun, "--"+FlagDataDir, data, "--"+FlagMarker, marker, "--", "/bin/sh", "-c", fakeEtcd).CombinedOutput()
	if err != nil {
		t.Fatalf("the marker was not written while etcd ran: %v\n%s", err, out)
	}
}
