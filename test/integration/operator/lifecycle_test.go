package operator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

const (
	// leaseName is the leader-election Lease of api.md §7.
	leaseName = "aa20b3a9.etcd-operator.cozystack.io"

	// startTimeout bounds the operator's start: connect, serve probes, acquire the Lease. Generous
	// because CI machines are shared; a healthy run takes a few seconds.
	startTimeout = 2 * time.Minute
	// shutdownTimeout is passed to --graceful-shutdown-timeout.
	shutdownTimeout = 10 * time.Second
	// exitTimeout bounds the wait for the process to exit after SIGTERM: the graceful shutdown plus
	// time to release the Lease and flush logs.
	exitTimeout = shutdownTimeout + 20*time.Second
	// pollInterval is how often the test re-checks an endpoint or the Lease.
	pollInterval = 200 * time.Millisecond
	// httpTimeout bounds one request to the operator's endpoints.
	httpTimeout = 2 * time.Second

	// operatorUser is the identity the operator runs as; it is bound to the generated ClusterRole only.
	operatorUser = "etcd-operator"
)

// Paths from this package to the generated manifests the operator is deployed with.
var (
	crdDirectory = filepath.Join("..", "..", "..", "config", "crd", "bases")
	roleFile     = filepath.Join("..", "..", "..", "config", "rbac", "role.yaml")
)

// TestOperatorLifecycle starts the real binary against a real API server with leader election on, as
// a user holding only the generated ClusterRole, checks the probes, the metrics, the Lease and the
// logs, then sends SIGTERM and checks for a clean exit that releases the Lease.
func TestOperatorLifecycle(t *testing.T) {
	t.Parallel()
	// Fail rather than skip (TESTING.md): a green run must never mean that nothing ran.
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is unset: this test needs a real kube-apiserver and etcd; " +
			"run `make test`, which builds them from pinned sources and sets it")
	}
	binary := operatorBinary(t)
	ctx := t.Context()

	env := &envtest.Environment{
		// The CRDs are installed so that controllers, once registered, find their kinds.
		CRDDirectoryPaths:     []string{crdDirectory},
		ErrorIfCRDPathMissing: true,
	}
	adminConfig, err := env.Start()
	if err != nil {
		t.Fatalf("starting the API server: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the API server: %v", err)
		}
	})
	admin, err := client.New(adminConfig, client.Options{})
	if err != nil {
		t.Fatal(err)
	}

	namespace := createNamespace(ctx, t, admin)
	grantGeneratedRole(ctx, t, admin)
	kubeconfig := writeKubeconfig(t, env)

	probeAddr, metricsAddr := freeAddress(t), freeAddress(t)
	logs := &syncBuffer{}
	cmd := exec.Command(binary,
		"--kubeconfig="+kubeconfig,
		"--leader-elect=true",
		"--leader-election-namespace="+namespace,
		"--health-probe-bind-address="+probeAddr,
		"--metrics-bind-address="+metricsAddr,
		"--graceful-shutdown-timeout="+shutdownTimeout.String(),
		"--log-level=debug",
	)
	cmd.Env = withoutOperatorEnv(os.Environ())
	cmd.Stdout, cmd.Stderr = logs, logs
	proc := startProcess(t, cmd)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("operator output:\n%s", logs.String())
		}
	})

	waitForStatus(ctx, t, proc, "http://"+probeAddr+"/healthz")
	waitForStatus(ctx, t, proc, "http://"+probeAddr+"/readyz")
	holder := waitForLeaseHolder(ctx, t, proc, admin, namespace)
	t.Logf("Lease %s/%s held by %s", namespace, leaseName, holder)
	// leader_election_master_status is 1 only in the replica that leads, and go_goroutines proves the
	// standard Go collectors are on the operator's registry.
	waitForMetrics(ctx, t, proc, "http://"+metricsAddr+"/metrics",
		"# TYPE go_goroutines gauge",
		`leader_election_master_status{name="`+leaseName+`"} 1`,
	)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("sending SIGTERM: %v", err)
	}
	start := time.Now()
	select {
	case <-proc.done:
		code, err := exitCode(proc.err)
		if err != nil || code != 0 {
			t.Fatalf("operator exit after SIGTERM: code %d, %v; want a clean exit with code 0", code, err)
		}
		t.Logf("operator exited with code 0 %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	case <-time.After(exitTimeout):
		t.Fatalf("operator still running %v after SIGTERM", exitTimeout)
	}

	assertLeaseReleased(ctx, t, admin, namespace)
	assertStructuredLogs(t, logs.String())
}

func createNamespace(ctx context.Context, t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "etcd-operator-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	return ns.Name
}

// grantGeneratedRole creates the ClusterRole generated from the kubebuilder markers and binds it to
// the operator's user, so that the test fails if the markers miss a permission the manager needs.
func grantGeneratedRole(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	data, err := os.ReadFile(roleFile)
	if err != nil {
		t.Fatalf("reading the generated RBAC (run `make manifests`): %v", err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatalf("parsing %s: %v", roleFile, err)
	}
	if err := c.Create(ctx, &role); err != nil {
		t.Fatalf("creating ClusterRole %s: %v", role.Name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: operatorUser}},
	}
	if err := c.Create(ctx, binding); err != nil {
		t.Fatalf("binding ClusterRole %s: %v", role.Name, err)
	}
}

func writeKubeconfig(t *testing.T, env *envtest.Environment) string {
	t.Helper()
	user, err := env.AddUser(envtest.User{Name: operatorUser}, nil)
	if err != nil {
		t.Fatalf("adding user %s: %v", operatorUser, err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		t.Fatalf("rendering the kubeconfig of %s: %v", operatorUser, err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// process is a started subprocess whose exit the test can observe without blocking.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once err is set
	err  error         // what cmd.Wait returned
}

// startProcess starts cmd and kills it at the end of the test if it is still running, which only
// happens when the test failed before stopping it.
func startProcess(t *testing.T, cmd *exec.Cmd) *process {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// poll runs check every pollInterval until it returns nil, the process exits, or startTimeout
// passes. The last check error is reported, so that a timeout says what was still wrong.
func poll(ctx context.Context, t *testing.T, proc *process, what string, check func(context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, pollInterval, startTimeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-proc.done:
			if proc.err == nil {
				return false, errors.New("operator exited early with code 0")
			}
			return false, fmt.Errorf("operator exited early: %w", proc.err)
		default:
		}
		last = check(ctx)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last check: %v)", what, err, last)
	}
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

func waitForStatus(ctx context.Context, t *testing.T, proc *process, url string) {
	t.Helper()
	poll(ctx, t, proc, url+" to return 200", func(ctx context.Context) error {
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

func waitForMetrics(ctx context.Context, t *testing.T, proc *process, url string, wantLines ...string) {
	t.Helper()
	poll(ctx, t, proc, url+" to serve Prometheus text", func(ctx context.Context) error {
		code, body, err := get(ctx, url)
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

func waitForLeaseHolder(ctx context.Context, t *testing.T, proc *process, c client.Client, namespace string) string {
	t.Helper()
	var holder string
	poll(ctx, t, proc, "the operator to acquire Lease "+leaseName, func(ctx context.Context) error {
		var lease coordinationv1.Lease
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: leaseName}, &lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return errors.New("the Lease has no holder")
		}
		holder = *lease.Spec.HolderIdentity
		return nil
	})
	return holder
}

// assertLeaseReleased checks what client-go's release writes: no holder and a 1 s duration, so that
// another replica can take over at once.
func assertLeaseReleased(ctx context.Context, t *testing.T, c client.Client, namespace string) {
	t.Helper()
	var lease coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: leaseName}, &lease); err != nil {
		t.Fatalf("reading the Lease after exit: %v", err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("Lease still held by %q after a clean exit; want it released", *h)
	}
	if d := lease.Spec.LeaseDurationSeconds; d == nil || *d != 1 {
		t.Errorf("Lease duration after release = %v, want 1", d)
	}
}

// assertStructuredLogs checks that every line the operator wrote is a JSON log record, including the
// lines of client-go's leader election, and that nothing was logged at error level.
func assertStructuredLogs(t *testing.T, logs string) {
	t.Helper()
	var started, stopped bool
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var record struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
			TS    string `json:"ts"`
		}
		if err := json.Unmarshal([]byte(line), &record); err != nil || record.Level == "" || record.TS == "" {
			t.Errorf("log line is not a JSON record with level and ts: %q", line)
			continue
		}
		if record.Level == "error" {
			t.Errorf("error logged during a clean start and stop: %s", line)
		}
		started = started || record.Msg == "Starting etcd-operator"
		stopped = stopped || record.Msg == "Stopped etcd-operator"
	}
	if !started || !stopped {
		t.Errorf("logs lack the start (%t) or stop (%t) record", started, stopped)
	}
}
