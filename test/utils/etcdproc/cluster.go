package etcdproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoBinary means neither ETCD_BIN nor $KUBEBUILDER_ASSETS/etcd names an executable file.
var ErrNoBinary = errors.New("no etcd binary: set ETCD_BIN, or KUBEBUILDER_ASSETS to the folder printed by `go run ./hack/binaries envtest`")

// ErrNotRunning is returned when an operation needs a running member process.
var ErrNotRunning = errors.New("etcd member is not running")

// ErrRunning is returned when an operation needs a stopped member process.
var ErrRunning = errors.New("etcd member is running")

const (
	// DefaultStartTimeout bounds StartCluster's wait for every member to report healthy. A cold
	// 3-member start on a loaded 2-core machine takes a few seconds; leader election alone
	// needs at least one election timeout (1 s by default).
	DefaultStartTimeout = time.Minute
	// DefaultStopTimeout is how long Stop waits after SIGTERM before it sends SIGKILL.
	DefaultStopTimeout = 10 * time.Second

	healthPoll    = 100 * time.Millisecond
	healthTimeout = 2 * time.Second
)

// FindBinary returns the etcd binary named by ETCD_BIN, else $KUBEBUILDER_ASSETS/etcd.
func FindBinary() (string, error) {
	candidates := []string{os.Getenv("ETCD_BIN")}
	if assets := os.Getenv("KUBEBUILDER_ASSETS"); assets != "" {
		candidates = append(candidates, filepath.Join(assets, "etcd"))
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return c, nil
		}
	}
	return "", ErrNoBinary
}

// Options configure a cluster.
type Options struct {
	// Binary is the etcd server binary; FindBinary's result when empty.
	Binary string
	// Size is the number of members; 1 when zero.
	Size int
	// Dir holds one folder per member (data dir and log). Required; tests pass t.TempDir().
	Dir string
	// ExtraArgs are appended to every member's flags. etcd's flag parsing keeps the last
	// occurrence, so they can override the defaults (e.g. "--election-timeout=2000").
	ExtraArgs []string
	// TLS serves client traffic over HTTPS with certificates from a generated PKI (in
	// Dir/pki) and requires client certificates. Peer traffic stays plain HTTP.
	TLS bool
}

// Cluster is a set of etcd member processes that formed one cluster.
type Cluster struct {
	// Members in the order of their names (m0, m1, ...).
	Members []*Member
	// PKI is the generated certificate authority when Options.TLS is set, else nil.
	PKI *PKI
}

// Member is one etcd server process. Its ports and data dir stay the same across restarts,
// like a Pod with a persistent volume.
type Member struct {
	// Name is the etcd member name.
	Name string
	// ClientURL is the member's client URL (http://127.0.0.1:port, https with Options.TLS).
	ClientURL string
	// MetricsURL is a plain-HTTP listener for /health and /metrics, so health checks work
	// whatever the client TLS settings. Empty for members started without one; health checks
	// then use ClientURL.
	MetricsURL string
	// PeerURL is the member's peer URL.
	PeerURL string
	// DataDir is the member's --data-dir.
	DataDir string
	// LogPath is the file that receives the member's stdout and stderr, across restarts.
	LogPath string

	binary string
	args   []string

	mu   sync.Mutex
	proc *process
}

type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

// NewCluster allocates ports and folders for a cluster without starting it.
func NewCluster(opts Options) (*Cluster, error) {
	if opts.Dir == "" {
		return nil, errors.New("etcdproc: Options.Dir is required")
	}
	if opts.Binary == "" {
		b, err := FindBinary()
		if err != nil {
			return nil, err
		}
		opts.Binary = b
	}
	size := max(opts.Size, 1)
	ports, err := FreePorts(3 * size)
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	clientScheme := "http"
	var tlsArgs []string
	if opts.TLS {
		if c.PKI, err = NewPKI(filepath.Join(opts.Dir, "pki")); err != nil {
			return nil, err
		}
		clientScheme = "https"
		tlsArgs = []string{
			"--cert-file=" + c.PKI.ServerCertFile,
			"--key-file=" + c.PKI.ServerKeyFile,
			"--trusted-ca-file=" + c.PKI.CAFile,
			"--client-cert-auth",
		}
	}
	initial := make([]string, 0, size)
	for i := range size {
		m := &Member{
			Name:       fmt.Sprintf("m%d", i),
			ClientURL:  fmt.Sprintf("%s://127.0.0.1:%d", clientScheme, ports[3*i]),
			PeerURL:    fmt.Sprintf("http://127.0.0.1:%d", ports[3*i+1]),
			MetricsURL: fmt.Sprintf("http://127.0.0.1:%d", ports[3*i+2]),
			binary:     opts.Binary,
		}
		dir := filepath.Join(opts.Dir, m.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating member dir: %w", err)
		}
		m.DataDir = filepath.Join(dir, "data")
		m.LogPath = filepath.Join(dir, "etcd.log")
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	// The token keeps members of two test clusters from ever joining each other, even if a
	// port is reused between tests.
	token := fmt.Sprintf("etcdproc-%d-%d", os.Getpid(), time.Now().UnixNano())
	for _, m := range c.Members {
		m.args = append([]string{
			"--name=" + m.Name,
			"--data-dir=" + m.DataDir,
			"--listen-client-urls=" + m.ClientURL,
			"--advertise-client-urls=" + m.ClientURL,
			"--listen-peer-urls=" + m.PeerURL,
			"--initial-advertise-peer-urls=" + m.PeerURL,
			"--initial-cluster=" + strings.Join(initial, ","),
			// Ignored once the data dir exists, so restarts rejoin with their persisted identity.
			"--initial-cluster-state=new",
			"--initial-cluster-token=" + token,
			"--listen-metrics-urls=" + m.MetricsURL,
			"--logger=zap",
			"--log-outputs=stderr",
		}, append(tlsArgs, opts.ExtraArgs...)...)
	}
	return c, nil
}

// StartCluster creates a cluster, starts every member and waits until all are healthy. On error
// it kills whatever it started.
func StartCluster(ctx context.Context, opts Options) (*Cluster, error) {
	c, err := NewCluster(opts)
	if err != nil {
		return nil, err
	}
	for _, m := range c.Members {
		if err := m.Start(); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
		defer cancel()
	}
	if err := c.WaitHealthy(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// Endpoints returns every member's client URL.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, 0, len(c.Members))
	for _, m := range c.Members {
		eps = append(eps, m.ClientURL)
	}
	return eps
}

// WaitHealthy waits until every member reports healthy, or ctx ends.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	for _, m := range c.Members {
		if err := m.WaitHealthy(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Close kills every running member and waits for the processes to exit. Data dirs are left for
// the caller (a test's TempDir) to remove.
func (c *Cluster) Close() error {
	var errs []error
	for _, m := range c.Members {
		if err := m.Kill(); err != nil && !errors.Is(err, ErrNotRunning) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Start starts the member process. A member that was stopped or killed restarts from its data
// dir with its original identity.
func (m *Member) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil {
		select {
		case <-m.proc.done:
		default:
			return fmt.Errorf("starting %s: %w", m.Name, ErrRunning)
		}
	}
	logFile, err := os.OpenFile(m.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening %s log: %w", m.Name, err)
	}
	cmd := exec.Command(m.binary, m.args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Own process group so signals reach only etcd; Pdeathsig so a crashed test binary does
	// not leave a member running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting %s: %w", m.Name, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	m.proc = p
	return nil
}

func (m *Member) running() (*process, bool) {
	m.mu.Lock()
	p := m.proc
	m.mu.Unlock()
	if p == nil {
		return nil, false
	}
	select {
	case <-p.done:
		return p, false
	default:
		return p, true
	}
}

// Running reports whether the member process is alive.
func (m *Member) Running() bool {
	_, ok := m.running()
	return ok
}

// Kill sends SIGKILL, the equivalent of a crash or an OOM kill, and waits for the exit.
func (m *Member) Kill() error {
	p, ok := m.running()
	if !ok {
		return fmt.Errorf("killing %s: %w", m.Name, ErrNotRunning)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing %s: %w", m.Name, err)
	}
	<-p.done
	return nil
}

// Stop sends SIGTERM and waits for a clean exit; after DefaultStopTimeout, or when ctx ends,
// it sends SIGKILL.
func (m *Member) Stop(ctx context.Context) error {
	p, ok := m.running()
	if !ok {
		return fmt.Errorf("stopping %s: %w", m.Name, ErrNotRunning)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping %s: %w", m.Name, err)
	}
	timer := time.NewTimer(DefaultStopTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
	case <-timer.C:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	return fmt.Errorf("stopping %s: killed after no exit on SIGTERM", m.Name)
}

// WipeDataDir deletes the member's data dir, as a lost or replaced volume would. The member
// must be stopped; restarted with the same flags it would try to form a new cluster, so callers
// that wipe a member usually remove it from etcd and add it back as a new member.
func (m *Member) WipeDataDir() error {
	if m.Running() {
		return fmt.Errorf("wiping %s data dir: %w", m.Name, ErrRunning)
	}
	if err := os.RemoveAll(m.DataDir); err != nil {
		return fmt.Errorf("wiping %s data dir: %w", m.Name, err)
	}
	return nil
}

// WaitHealthy polls the member's /health endpoint until it reports healthy (etcd answers true
// only when the member has a leader and no alarm), the process exits, or ctx ends.
func (m *Member) WaitHealthy(ctx context.Context) error {
	client := &http.Client{Timeout: healthTimeout}
	ticker := time.NewTicker(healthPoll)
	defer ticker.Stop()
	var last error
	for {
		p, ok := m.running()
		if !ok {
			if p != nil {
				<-p.done
				exit := p.err
				if exit == nil {
					exit = errors.New("exit status 0")
				}
				return fmt.Errorf("%s exited while waiting for health: %w; log tail:\n%s", m.Name, exit, m.LogTail(20))
			}
			return fmt.Errorf("waiting for %s health: %w", m.Name, ErrNotRunning)
		}
		if last = m.checkHealth(ctx, client); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s health: %w (last check: %w)", m.Name, ctx.Err(), last)
		case <-ticker.C:
		}
	}
}

func (m *Member) checkHealth(ctx context.Context, client *http.Client) error {
	base := m.MetricsURL
	if base == "" {
		base = m.ClientURL
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&body); err != nil {
		return fmt.Errorf("decoding /health: %w", err)
	}
	if resp.StatusCode != http.StatusOK || body.Health != "true" {
		return fmt.Errorf("/health: status %d health %q reason %q", resp.StatusCode, body.Health, body.Reason)
	}
	return nil
}

// LogTail returns the last n lines of the member's log, for failure messages.
func (m *Member) LogTail(n int) string {
	b, err := os.ReadFile(m.LogPath)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", m.LogPath, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// FreePorts returns n distinct loopback ports that were free when checked, chosen below the
// kernel's ephemeral range (net.ipv4.ip_local_port_range). A port the kernel hands out for
// "127.0.0.1:0" comes from that range, which every outgoing connection on the machine draws
// from too, so in the seconds between the choice and etcd's bind (a joiner binds only after its
// MemberAddAsLearner, which a fresh cluster refuses for 5 s) a client connection could take it:
// TestLearnerAddAndPromote once saw its learner fail to bind and another process answer 404 on
// its peer port. Below the range only another listener can take it, and the listeners stay open
// until all n are chosen, so no port is handed out twice. Without a readable range it falls back
// to the kernel's choice.
func FreePorts(n int) ([]int, error) {
	low := ephemeralLow()
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		addr := "127.0.0.1:0"
		if low > minChosenPort && tries < 1000 {
			addr = fmt.Sprintf("127.0.0.1:%d", minChosenPort+rand.IntN(low-minChosenPort)) //nolint:gosec // G404: spreads test ports, not security
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if addr != "127.0.0.1:0" {
				continue // taken: try another
			}
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// minChosenPort is the lowest port FreePorts picks: above the well-known and most registered
// service ports.
const minChosenPort = 20000

// ephemeralLow is the low end of the kernel's ephemeral port range, 0 when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 0
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0
	}
	return low
}
