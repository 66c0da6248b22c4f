package snapshotagent

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/agentenv"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// runWith runs the agent with env and returns its exit code, its result and its log.
func runWith(ctx context.Context, t *testing.T, args []string, env map[string]string) (int, snapshot.Result, string) {
	t.Helper()
	term := filepath.Join(t.TempDir(), "termination-log")
	env[agentenv.EnvTerminationMessagePath] = term
	var log bytes.Buffer
	code := Run(ctx, args, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, &log)
	data, err := os.ReadFile(term)
	if err != nil {
		t.Fatalf("no termination message: %v", err)
	}
	res, err := snapshot.ParseTerminationMessage(data)
	if err != nil {
		t.Fatalf("termination message %s: %v", data, err)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(log.String()), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("log line is not JSON: %s", line)
		}
	}
	return code, res, log.String()
}

// unreachableEnv points at a port nobody listens on.
func unreachableEnv(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{
		snapshot.EnvEndpoints: "http://127.0.0.1:1", snapshot.EnvSnapshotName: "n", snapshot.EnvSnapshotUID: "u",
		snapshot.EnvDestination: snapshot.DestinationPVC, snapshot.EnvPVCDir: t.TempDir(), snapshot.EnvPVCClaim: "c",
		snapshot.EnvDialTimeout: "300ms",
	}
}

func TestRunReportsEveryFailureInTheTerminationMessage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		args   []string
		edit   func(env map[string]string)
		cancel bool
		want   snapshot.Reason
	}{
		{"invalid environment", nil, func(env map[string]string) { delete(env, snapshot.EnvEndpoints) }, false, snapshot.ReasonInvalidConfig},
		{"unexpected arguments", []string{"--now"}, func(map[string]string) {}, false, snapshot.ReasonInvalidConfig},
		{"missing password file", nil, func(env map[string]string) {
			env[snapshot.EnvUsername], env[snapshot.EnvPasswordFile] = "root", "/nonexistent/password"
		}, false, snapshot.ReasonInvalidConfig},
		{"claim not mounted", nil, func(env map[string]string) { env[snapshot.EnvPVCDir] = "/nonexistent" }, false, snapshot.ReasonInvalidConfig},
		{"etcd unreachable", nil, func(map[string]string) {}, false, snapshot.ReasonEtcdUnreachable},
		{"overall deadline", nil, func(env map[string]string) {
			env[snapshot.EnvDialTimeout], env[snapshot.EnvTimeout] = "1m", "200ms"
		}, false, snapshot.ReasonDeadlineExceeded},
		{"asked to stop", nil, func(map[string]string) {}, true, snapshot.ReasonInterrupted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := unreachableEnv(t)
			c.edit(env)
			ctx := t.Context()
			if c.cancel {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				cancel()
			}
			code, res, log := runWith(ctx, t, c.args, env)
			if res.Reason != c.want || code != c.want.ExitCode() {
				t.Errorf("reason %q, exit %d; want %q, %d\nlog: %s", res.Reason, code, c.want, c.want.ExitCode(), log)
			}
			if !strings.Contains(log, `"reason":"`+string(c.want)+`"`) {
				t.Errorf("the log does not name the reason: %s", log)
			}
			// A failed run reports its memory too: an agent near its limit is worth knowing about.
			if runtime.GOOS == "linux" && res.PeakRSSBytes <= 0 {
				t.Errorf("peakRSSBytes = %d, want the process's VmHWM", res.PeakRSSBytes)
			}
		})
	}
}

// TestRunNeverPrintsSecrets: credentials from the environment appear in no output.
func TestRunNeverPrintsSecrets(t *testing.T) {
	t.Parallel()
	const password, secretKey = "pw-canary-7f3a", "sk-canary-91bc" //nolint:gosec // G101: canaries the test searches the output for
	env := unreachableEnv(t)
	env[snapshot.EnvUsername], env[snapshot.EnvPassword] = "root", password
	_, res, log := runWith(t.Context(), t, nil, env)
	env = unreachableEnv(t)
	delete(env, snapshot.EnvPVCDir)
	env[snapshot.EnvDestination], env[snapshot.EnvS3Endpoint], env[snapshot.EnvS3Bucket] = snapshot.DestinationS3, "http://127.0.0.1:1", "b"
	env[agentenv.EnvAWSAccessKeyID], env[agentenv.EnvAWSSecretAccessKey] = "AKID", secretKey
	_, res2, log2 := runWith(t.Context(), t, nil, env)
	all := log + log2 + res.Message + res2.Message
	if strings.Contains(all, password) || strings.Contains(all, secretKey) {
		t.Errorf("a secret was printed:\n%s", all)
	}
	if res2.Reason != snapshot.ReasonStoreUnreachable {
		t.Errorf("S3 endpoint down: %q, want StoreUnreachable (%s)", res2.Reason, res2.Message)
	}
}

// TestMessageBufferPoolFitsSnapshotMessages: a snapshot message (32 KiB of data and a few bytes
// of framing) takes a 64 KiB buffer, not one of the default pool's 1 MiB buffers.
func TestMessageBufferPoolFitsSnapshotMessages(t *testing.T) {
	t.Parallel()
	pool := messageBufferPool()
	for size, want := range map[int]int{32<<10 + 20: 64 << 10, 16 << 10: 16 << 10, 2 << 20: 2 << 20} {
		buf := pool.Get(size)
		if len(*buf) != size || cap(*buf) != want {
			t.Errorf("Get(%d): len %d, cap %d; want cap %d", size, len(*buf), cap(*buf), want)
		}
		pool.Put(buf)
	}
}
