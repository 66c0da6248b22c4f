package s3server

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// BinDirEnv names the folder that holds the s3server binary, as `go run ./hack/binaries
// s3server` prints it.
const BinDirEnv = "S3SERVER_BIN_DIR"

// BinaryName is the file name of the server in BinDirEnv.
const BinaryName = "s3server"

// Region is the region clients sign for. SeaweedFS accepts any region in a signature; clients
// need one to sign at all.
const Region = "us-east-1"

// DefaultStartTimeout bounds the wait for readiness (Start). The server stores its first object
// about 10 s after it started (waitReady says why).
const DefaultStartTimeout = time.Minute

// ErrNoBinary means BinDirEnv is unset.
var ErrNoBinary = errors.New(BinDirEnv + " is not set: run through `make test`, or set it to the folder printed by `go run ./hack/binaries s3server`")

// FindBinary returns $S3SERVER_BIN_DIR/s3server. It returns ErrNoBinary when the variable is
// unset and another error when it is set but names no executable server.
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
	// Dir holds the server's data and log. Required; tests pass t.TempDir().
	Dir string
	// AccessKey and SecretKey are the credentials of the server's one identity, which may do
	// everything. Random when empty.
	AccessKey, SecretKey string
	// StartTimeout bounds the wait for readiness; DefaultStartTimeout when zero.
	StartTimeout time.Duration
	// Host is the IPv4 address every component binds to and advertises; 127.0.0.1 when empty.
	// e2e tests pass the local cluster's host address, which Pods can reach
	// (docs/local-cluster.md, "S3 server").
	Host string
	// ExtraArgs are appended to the flags of `weed server` (hack/s3server/doc.go); the last
	// occurrence of a flag wins.
	ExtraArgs []string
}

// Server is one running S3 server.
type Server struct {
	// Endpoint is the S3 API's base URL, http://<Options.Host>:<port>.
	Endpoint string
	// AccessKey and SecretKey are the credentials of the server's identity.
	AccessKey, SecretKey string
	// Dir holds the data (Dir/data) and the log.
	Dir string
	// LogPath receives the server's stdout and stderr.
	LogPath string

	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error // set before done is closed
	sockets []string
}

// component ports, in the order of the flags that set them.
var portFlags = []string{
	"master.port", "master.port.grpc",
	"volume.port", "volume.port.grpc",
	"filer.port", "filer.port.grpc",
	"s3.port", "s3.port.grpc",
}

// Start starts a server and waits until it is ready: a signed request succeeded and an object
// was stored (and removed again, with its bucket). On error it kills what it
// started; the error then carries the tail of the log.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Dir == "" {
		return nil, errors.New("s3server: Options.Dir is required")
	}
	if opts.Binary == "" {
		b, err := FindBinary()
		if err != nil {
			return nil, err
		}
		opts.Binary = b
	}
	if opts.AccessKey == "" {
		opts.AccessKey = "AK" + strings.ToUpper(randomHex(9))
	}
	if opts.SecretKey == "" {
		opts.SecretKey = randomHex(20)
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	s := &Server{
		AccessKey: opts.AccessKey,
		SecretKey: opts.SecretKey,
		Dir:       opts.Dir,
		LogPath:   filepath.Join(opts.Dir, "s3server.log"),
		done:      make(chan struct{}),
	}
	dataDir := filepath.Join(opts.Dir, "data")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dataDir, err)
	}
	configPath := filepath.Join(opts.Dir, "s3.json")
	if err := writeIdentities(configPath, opts.AccessKey, opts.SecretKey); err != nil {
		return nil, err
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	ports, err := freePorts(opts.Host, len(portFlags))
	if err != nil {
		return nil, err
	}
	args := []string{"-dir=" + dataDir, "-s3.config=" + configPath, "-ip=" + opts.Host, "-ip.bind=" + opts.Host}
	for i, flag := range portFlags {
		args = append(args, fmt.Sprintf("-%s=%d", flag, ports[i]))
	}
	args = append(args, opts.ExtraArgs...)
	s.Endpoint = "http://" + net.JoinHostPort(opts.Host, strconv.Itoa(ports[6]))
	// Unix sockets SeaweedFS makes beside its TCP listeners, at paths derived from the ports
	// (pb.RegisterLocalGrpcSocket, -filer.localSocket and -s3.localSocket defaults); a killed
	// server leaves them behind, so Close removes them.
	for i, svc := range []string{"master", "volume", "filer", "s3"} {
		s.sockets = append(s.sockets, fmt.Sprintf("/tmp/seaweedfs-%s-grpc-%d.sock", svc, ports[2*i+1]))
	}
	s.sockets = append(s.sockets,
		fmt.Sprintf("/tmp/seaweedfs-filer-%d.sock", ports[4]),
		fmt.Sprintf("/tmp/seaweedfs-s3-%d.sock", ports[6]))

	logFile, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the server log: %w", err)
	}
	s.cmd = exec.Command(opts.Binary, args...)
	s.cmd.Dir = opts.Dir
	// A minimal environment: SeaweedFS reads AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY as an
	// extra admin identity, WEED_* variables as flags, and $HOME/.seaweedfs for configuration;
	// none of the test process's may leak in.
	s.cmd.Env = []string{"HOME=" + opts.Dir, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir()}
	s.cmd.Stdout = logFile
	s.cmd.Stderr = logFile
	// Own process group so signals reach only the server; Pdeathsig so a crashed test binary
	// does not leave it running.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := s.cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", opts.Binary, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		_ = logFile.Close()
		close(s.done)
	}()
	if err := s.waitReady(ctx, opts.StartTimeout); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("s3server at %s not ready after %s: %w\nlog tail:\n%s",
			s.Endpoint, time.Since(start).Round(time.Millisecond), err, s.LogTail(30))
	}
	return s, nil
}

// readyBucket is the bucket of the write probe that ends the wait for readiness; it is deleted
// again.
const readyBucket = "s3server-ready"

// waitReady waits until the server answers a signed request and then until it has stored an
// object, or the process exits, or timeout passes. Answering comes about 2 s after the start;
// storing takes longer, about 8 s more, because a fresh SeaweedFS holds back volume allocation
// for a few seconds after its master minted the cluster's identity and its filer serves the
// object-write locks only after confirming it has no peers; a test's first write would block
// for that time instead, and count it in what it measures.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := s.Client(func(o *s3.Options) { o.RetryMaxAttempts = 1 })
	steps := []struct {
		name string
		do   func(context.Context) error
	}{
		{"ListBuckets", func(ctx context.Context) error {
			_, err := client.ListBuckets(ctx, &s3.ListBucketsInput{})
			return err
		}},
		{"CreateBucket", func(ctx context.Context) error {
			_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(readyBucket)})
			var owned *types.BucketAlreadyOwnedByYou
			if errors.As(err, &owned) {
				return nil
			}
			return err
		}},
		{"PutObject", func(ctx context.Context) error {
			_, err := client.PutObject(ctx, &s3.PutObjectInput{
				Bucket: aws.String(readyBucket), Key: aws.String("probe"), Body: strings.NewReader("ready"),
			})
			return err
		}},
		{"DeleteObject", func(ctx context.Context) error {
			_, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(readyBucket), Key: aws.String("probe")})
			return err
		}},
		{"DeleteBucket", func(ctx context.Context) error {
			_, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(readyBucket)})
			return err
		}},
	}
	for _, step := range steps {
		for {
			// A PutObject waits inside the server while the write locks are not served yet.
			attempt, cancelAttempt := context.WithTimeout(ctx, 15*time.Second)
			err := step.do(attempt)
			cancelAttempt()
			if err == nil {
				break
			}
			select {
			case <-s.done:
				return s.exitError()
			case <-ctx.Done():
				return fmt.Errorf("last %s: %w", step.name, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// exitError describes the exit of a server that stopped on its own.
func (s *Server) exitError() error {
	if s.waitErr == nil {
		return errors.New("the server exited with status 0")
	}
	return fmt.Errorf("the server exited: %w", s.waitErr)
}

// Client returns an S3 client signed with the server's credentials.
func (s *Server) Client(optFns ...func(*s3.Options)) *s3.Client {
	return s.ClientWithCredentials(s.AccessKey, s.SecretKey, optFns...)
}

// ClientWithCredentials returns an S3 client for the server that signs with the given keys. Like
// every client of S3-compatible stores should, it addresses buckets by path
// (http://host/bucket/key, no bucket DNS names) and sends checksums only where the operation
// requires them (no default CRC trailers, which some stores reject).
func (s *Server) ClientWithCredentials(accessKey, secretKey string, optFns ...func(*s3.Options)) *s3.Client {
	creds := aws.Credentials{AccessKeyID: accessKey, SecretAccessKey: secretKey, Source: "s3server"}
	return s3.New(s3.Options{
		BaseEndpoint:               aws.String(s.Endpoint),
		Region:                     Region,
		UsePathStyle:               true,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return creds, nil
		}),
	}, optFns...)
}

var bucketSeq atomic.Int64

// CreateBucket creates a bucket with a name unique in this test process and returns the name.
func (s *Server) CreateBucket(ctx context.Context) (string, error) {
	name := fmt.Sprintf("test-%d-%d", os.Getpid(), bucketSeq.Add(1))
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		return "", fmt.Errorf("creating bucket %s: %w", name, err)
	}
	return name, nil
}

// Close kills the server (its data is for one test only), waits for it to exit and removes the
// Unix sockets it leaves behind. It is safe to call more than once.
func (s *Server) Close() error {
	select {
	case <-s.done:
	default:
		if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("killing the s3server process group: %w", err)
		}
		<-s.done
	}
	for _, p := range s.sockets {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
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

// Pid is the server's process ID.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// LogTail returns the last n lines of the server's log, for failure messages.
func (s *Server) LogTail(n int) string {
	b, err := os.ReadFile(s.LogPath)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", s.LogPath, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// identities is SeaweedFS's static S3 configuration (-s3.config): one identity with every
// action and one key pair. With an identity configured, unsigned and wrongly signed requests
// are refused.
type identities struct {
	Identities []identity `json:"identities"`
}

type identity struct {
	Name        string       `json:"name"`
	Credentials []credential `json:"credentials"`
	Actions     []string     `json:"actions"`
}

type credential struct {
	AccessKey string `json:"accessKey"`
	SecretKey string `json:"secretKey"`
}

func writeIdentities(path, accessKey, secretKey string) error {
	data, err := json.MarshalIndent(identities{Identities: []identity{{
		Name:        "test",
		Credentials: []credential{{AccessKey: accessKey, SecretKey: secretKey}},
		Actions:     []string{"Admin", "Read", "List", "Tagging", "Write"},
	}}}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return fmt.Sprintf("%x", b)
}

// freePorts returns n distinct loopback ports that were free when checked, below the kernel's
// ephemeral range, for the reason test/utils/etcdproc gives: outgoing connections draw their
// ports from that range and could take one between the choice and the server's bind. The
// listeners stay open until all n are chosen, so no port is handed out twice.
func freePorts(host string, n int) ([]int, error) {
	low := ephemeralLow()
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		addr := net.JoinHostPort(host, "0")
		if low > minChosenPort && tries < 1000 {
			addr = net.JoinHostPort(host, strconv.Itoa(minChosenPort+mathrand.IntN(low-minChosenPort))) //nolint:gosec // G404: spreads test ports, not security
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if addr != net.JoinHostPort(host, "0") {
				continue // taken: try another
			}
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// minChosenPort is the lowest port freePorts picks: above the well-known and most registered
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
