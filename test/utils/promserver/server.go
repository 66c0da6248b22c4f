package promserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// BinDirEnv names the folder that holds the prometheus binary, as `go run ./hack/binaries
// prometheus` prints it.
const BinDirEnv = "PROMETHEUS_BIN_DIR"

// BinaryName is the file name of the server in BinDirEnv.
const BinaryName = "prometheus"

// DefaultStartTimeout bounds the wait for /-/ready. An empty TSDB opens in well under a second;
// the rest is the process start on a loaded machine.
const DefaultStartTimeout = time.Minute

// DefaultInterval is the scrape and rule evaluation interval: short, so that a member that is
// down for a few seconds shows in the series.
const DefaultInterval = time.Second

// ErrNoBinary means BinDirEnv is unset.
var ErrNoBinary = errors.New(BinDirEnv + " is not set: run through the e2e make targets, or set it to the folder printed by `go run ./hack/binaries prometheus`")

// FindBinary returns $PROMETHEUS_BIN_DIR/prometheus. It returns ErrNoBinary when the variable
// is unset and another error when it is set but names no executable server.
func FindBinary() (string, error) {
	dir := os.Getenv(BinDirEnv)
	if dir == "" {
		return "", ErrNoBinary
	}
	bin := filepath.Join(dir, BinaryName)
	fi, err := os.Stat(bin)
	if err != nil {
		return "", fmt.Errorf("%s=%s: %w", BinDirEnv, dir, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s=%s: %s is not an executable file", BinDirEnv, dir, bin)
	}
	return bin, nil
}

// Options configure a server.
type Options struct {
	// Binary is the server binary; FindBinary's result when empty.
	Binary string
	// Dir holds the configuration, the targets files, the TSDB and the log. Required; tests
	// pass t.TempDir().
	Dir string
	// Host is the IPv4 address the server listens on; 127.0.0.1 when empty.
	Host string
	// Interval is the scrape and rule evaluation interval; DefaultInterval when zero.
	Interval time.Duration
	// Jobs are the scrape jobs; each starts without targets (SetTargets).
	Jobs []Job
	// RuleFiles are rule files (absolute paths) the server evaluates every Interval.
	RuleFiles []string
	// StartTimeout bounds the wait for readiness; DefaultStartTimeout when zero.
	StartTimeout time.Duration
}

// Server is one running Prometheus.
type Server struct {
	// URL is the HTTP API's base URL, http://<Options.Host>:<port>.
	URL string
	// Dir is Options.Dir; LogPath receives the server's output.
	Dir, LogPath string
	// Interval is the scrape and evaluation interval in effect.
	Interval time.Duration

	http    *http.Client
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error // set before done is closed
}

// Start writes the configuration, starts the server and waits until it is ready.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Dir == "" {
		return nil, errors.New("promserver: Options.Dir is required")
	}
	if opts.Binary == "" {
		bin, err := FindBinary()
		if err != nil {
			return nil, err
		}
		opts.Binary = bin
	}
	opts = withDefaults(opts)
	s := &Server{Dir: opts.Dir, LogPath: filepath.Join(opts.Dir, "prometheus.log"), Interval: opts.Interval,
		http: &http.Client{Timeout: 30 * time.Second}, done: make(chan struct{})}
	configPath, err := s.writeFiles(opts)
	if err != nil {
		return nil, err
	}
	port, err := freePort(opts.Host)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(opts.Host, strconv.Itoa(port))
	s.URL = "http://" + addr
	if err := s.start(opts.Binary, configPath, addr); err != nil {
		return nil, err
	}
	start := time.Now()
	if err := s.waitReady(ctx, opts.StartTimeout); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("prometheus at %s not ready after %s: %w\nlog tail:\n%s",
			s.URL, time.Since(start).Round(time.Millisecond), err, s.LogTail(30))
	}
	return s, nil
}

func withDefaults(opts Options) Options {
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	return opts
}

// writeFiles writes the configuration and an empty targets file per job, and returns the
// configuration's path.
func (s *Server) writeFiles(opts Options) (string, error) {
	if err := os.MkdirAll(filepath.Join(opts.Dir, "targets"), 0o700); err != nil {
		return "", fmt.Errorf("creating the targets folder: %w", err)
	}
	for _, j := range opts.Jobs {
		if err := s.SetTargets(j.Name, nil); err != nil {
			return "", err
		}
	}
	cfg, err := renderConfig(opts.Dir, opts.Interval, opts.Jobs, opts.RuleFiles)
	if err != nil {
		return "", err
	}
	path := filepath.Join(opts.Dir, "prometheus.yml")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		return "", fmt.Errorf("writing the configuration: %w", err)
	}
	return path, nil
}

func (s *Server) start(binary, configPath, addr string) error {
	logFile, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening the server log: %w", err)
	}
	s.cmd = exec.Command(binary,
		"--config.file="+configPath,
		"--storage.tsdb.path="+filepath.Join(s.Dir, "data"),
		"--web.listen-address="+addr,
		// The series of one test, kept for the test only.
		"--storage.tsdb.retention.time=1d",
	)
	s.cmd.Dir = s.Dir
	s.cmd.Env = []string{"HOME=" + s.Dir, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir()}
	s.cmd.Stdout = logFile
	s.cmd.Stderr = logFile
	// Own process group so signals reach only the server; Pdeathsig so a crashed test binary
	// does not leave it running.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting %s: %w", binary, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		_ = logFile.Close()
		close(s.done)
	}()
	return nil
}

// freePort returns a port on host that was free a moment ago. Prometheus takes a listen address,
// not a socket, so the port is closed again before the server binds it; a lost race makes the
// server exit at once, which Start reports.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s: %w", host, err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls /-/ready until it answers 200, the process exits, or timeout passes.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/-/ready", nil)
		if err != nil {
			return err
		}
		resp, err := s.http.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/-/ready answered %s", resp.Status)
		}
		last = err
		select {
		case <-s.done:
			return s.exitError()
		case <-ctx.Done():
			return fmt.Errorf("last attempt: %w", last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *Server) exitError() error {
	if s.waitErr == nil {
		return errors.New("the server exited with status 0")
	}
	return fmt.Errorf("the server exited: %w", s.waitErr)
}

// SetTargets replaces the targets of job. The file is renamed into place, so the server's file
// watch never reads half of it.
func (s *Server) SetTargets(job string, groups []TargetGroup) error {
	data, err := renderTargets(groups)
	if err != nil {
		return err
	}
	path := targetsFile(s.Dir, job)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("writing targets of %s: %w", job, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing targets of %s: %w", job, err)
	}
	return nil
}

// Running reports whether the server process is alive.
func (s *Server) Running() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Close kills the server (its data is for one test only) and waits for it to exit. It is safe
// to call more than once.
func (s *Server) Close() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing the prometheus process group: %w", err)
	}
	<-s.done
	return nil
}

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	data, err := os.ReadFile(s.LogPath)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", s.LogPath, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
