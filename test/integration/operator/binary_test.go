package operator_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// buildTimeout bounds `go build` of the operator on a loaded CI machine with a warm module cache.
const buildTimeout = 5 * time.Minute

// operatorPackage is built from source by the tests, so that they exercise main.go too.
const operatorPackage = "github.com/etcd-operator/etcd-operator/cmd/etcd-operator"

// binaryDir holds the operator built once for every test in this package; TestMain removes it.
var binaryDir string

// buildOnce builds the operator at most once per test binary: linking it takes tens of seconds.
var buildOnce = sync.OnceValues(func() (string, error) {
	path := filepath.Join(binaryDir, "etcd-operator")
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	// `go test` puts $GOROOT/bin first in PATH, so this is the toolchain running the tests.
	cmd := exec.CommandContext(ctx, "go", "build", "-o", path, operatorPackage)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", operatorPackage, err, out)
	}
	return path, nil
})

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "etcd-operator-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating a folder for the operator binary:", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	binaryDir = dir
	return m.Run()
}

// operatorBinary returns the path of the built operator, failing the test if it does not build.
func operatorBinary(t *testing.T) string {
	t.Helper()
	path, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// freeAddress returns a loopback address whose port was free a moment ago. The port is released
// before the operator binds it; a collision in between fails the test loudly rather than flakily
// passing, which is acceptable for a handful of ports per run.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatalf("releasing port %s: %v", addr, err)
	}
	return addr
}

// syncBuffer collects a subprocess's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// exitCode returns the exit code of a finished command, or an error if it did not exit normally
// (killed by a signal, never started).
func exitCode(err error) (int, error) {
	if err == nil {
		return 0, nil
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		return 0, err
	}
	if code := exitErr.ExitCode(); code >= 0 {
		return code, nil
	}
	return 0, fmt.Errorf("process did not exit by itself: %s", strconv.Quote(exitErr.String()))
}
