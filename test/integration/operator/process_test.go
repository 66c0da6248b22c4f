package operator_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

const (
	// startTimeout bounds each wait while the operator starts: serving probes, acquiring or taking
	// over the Lease. Generous because CI machines are shared; a healthy run needs a few seconds.
	startTimeout = 2 * time.Minute
	// shutdownTimeout is passed to --graceful-shutdown-timeout.
	shutdownTimeout = 10 * time.Second
	// exitTimeout bounds the wait for the process to exit after SIGTERM: the graceful shutdown plus
	// time to release the Lease and flush logs.
	exitTimeout = shutdownTimeout + 20*time.Second
	// pollInterval is how often a wait re-checks an endpoint or the Lease.
	pollInterval = 200 * time.Millisecond
	// httpTimeout bounds one request to the operator's endpoints.
	httpTimeout = 2 * time.Second
)

// operator is one running operator replica.
type operator struct {
	cmd         *exec.Cmd
	logs        *syncBuffer
	probeURL    string // base URL of /healthz and /readyz
	metricsURL  string // full URL of /metrics
	done        chan struct{}
	err         error // what cmd.Wait returned; read only after done is closed
	description string
}

// startOperator runs the operator binary as operatorUser with leader election on, its Lease in
// namespace, its endpoints on free loopback ports, and extraArgs. The process is killed at the end of the test
// if it is still running (only when the test failed before stopping it), and its output is logged if
// the test failed.
func startOperator(t *testing.T, namespace, description string, extraArgs ...string) *operator {
	t.Helper()
	return startReplica(t, exec.Command(operatorBinary(t)), namespace, description, extraArgs...)
}

// startOperatorInProcess is startOperator with the operator run by this test binary
// (runInProcess) instead of the built one: the same operator.Run, but the process waits for the
// manager's stop sequence to end before it exits, so that everything the stop logs is logged. env
// is added to its environment (holdAtEnv).
func startOperatorInProcess(t *testing.T, namespace, description string, env []string, extraArgs ...string) *operator {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append([]string{runInProcessEnv + "=1"}, env...)
	return startReplica(t, cmd, namespace, description, extraArgs...)
}

// startReplica runs cmd, with cmd.Env added to this process's environment, as described for
// startOperator.
func startReplica(t *testing.T, cmd *exec.Cmd, namespace, description string, extraArgs ...string) *operator {
	t.Helper()
	probeAddr, metricsAddr := freeAddress(t), freeAddress(t)
	o := &operator{
		logs:        &syncBuffer{},
		probeURL:    "http://" + probeAddr,
		metricsURL:  "http://" + metricsAddr + "/metrics",
		done:        make(chan struct{}),
		description: description,
	}
	o.cmd = cmd
	o.cmd.Args = append(o.cmd.Args, append([]string{
		"--kubeconfig=" + operatorKubeconfig,
		"--leader-elect=true",
		"--leader-election-namespace=" + namespace,
		"--health-probe-bind-address=" + probeAddr,
		"--metrics-bind-address=" + metricsAddr,
		"--graceful-shutdown-timeout=" + shutdownTimeout.String(),
		"--log-level=debug",
	}, extraArgs...)...)
	o.cmd.Env = append(withoutOperatorEnv(os.Environ()), cmd.Env...)
	o.cmd.Stdout, o.cmd.Stderr = o.logs, o.logs
	if err := o.cmd.Start(); err != nil {
		t.Fatalf("starting the %s operator: %v", description, err)
	}
	go func() {
		o.err = o.cmd.Wait()
		close(o.done)
	}()
	t.Cleanup(func() {
		select {
		case <-o.done:
		default:
			_ = o.cmd.Process.Kill()
			<-o.done
		}
		if t.Failed() {
			t.Logf("output of the %s operator:\n%s", description, o.logs.String())
		}
	})
	return o
}

// stop sends SIGTERM and waits, at most exitTimeout, for the process to exit with code 0.
func (o *operator) stop(t *testing.T) {
	t.Helper()
	if err := o.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("sending SIGTERM to the %s operator: %v", o.description, err)
	}
	start := time.Now()
	select {
	case <-o.done:
		code, err := exitCode(o.err)
		if err != nil || code != 0 {
			t.Fatalf("%s operator after SIGTERM: exit code %d, %v; want a clean exit with code 0", o.description, code, err)
		}
		t.Logf("%s operator exited with code 0 %v after SIGTERM", o.description, time.Since(start).Round(time.Millisecond))
	case <-time.After(exitTimeout):
		t.Fatalf("%s operator still running %v after SIGTERM", o.description, exitTimeout)
	}
}

// poll runs check every pollInterval until it returns nil, the operator exits, or startTimeout
// passes. The last check error is reported, so that a timeout says what was still wrong.
func (o *operator) poll(ctx context.Context, t *testing.T, what string, check func(context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, pollInterval, startTimeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-o.done:
			if o.err == nil {
				return false, errors.New("operator exited early with code 0")
			}
			return false, fmt.Errorf("operator exited early: %w", o.err)
		default:
		}
		last = check(ctx)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s operator: waiting for %s: %v (last check: %v)", o.description, what, err, last)
	}
}

// waitForStatus waits until GET url returns 200.
func (o *operator) waitForStatus(ctx context.Context, t *testing.T, url string) {
	t.Helper()
	o.poll(ctx, t, url+" to return 200", func(ctx context.Context) error {
		code, body, err := get(ctx, url)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("status %d: %s", code, body)
		}
		return nil
	})
}

// waitForMetrics waits until the metrics endpoint serves text containing every wanted line.
func (o *operator) waitForMetrics(ctx context.Context, t *testing.T, wantLines ...string) {
	t.Helper()
	o.poll(ctx, t, o.metricsURL+" to serve the expected metrics", func(ctx context.Context) error {
		code, body, err := get(ctx, o.metricsURL)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("status %d", code)
		}
		for _, want := range wantLines {
			if !strings.Contains(body, want) {
				return fmt.Errorf("no line %q in %d bytes of metrics", want, len(body))
			}
		}
		return nil
	})
}

func get(ctx context.Context, url string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, httpTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
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

// exitCode returns the exit code of a finished command, or an error if it did not exit by itself
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

// waitForControllers waits until every named controller has synced its caches and started its
// workers. Stopping before that is legal but makes controller-runtime log cache-sync errors, which
// the clean start-and-stop tests would rightly count as errors.
func (o *operator) waitForControllers(ctx context.Context, t *testing.T, names ...string) {
	t.Helper()
	o.poll(ctx, t, "controllers "+strings.Join(names, ", ")+" to start their workers", func(context.Context) error {
		logs := o.logs.String()
		for _, name := range names {
			if !strings.Contains(logs, `"msg":"Starting workers","controller":"`+name+`"`) {
				return fmt.Errorf("controller %s has not started its workers", name)
			}
		}
		return nil
	})
}

// waitForLog waits until the operator's output contains text.
func (o *operator) waitForLog(ctx context.Context, t *testing.T, text string) {
	t.Helper()
	o.poll(ctx, t, "a log record with "+text, func(context.Context) error {
		if !strings.Contains(o.logs.String(), text) {
			return errors.New("not logged yet")
		}
		return nil
	})
}
