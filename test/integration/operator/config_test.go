package operator_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// configErrorTimeout bounds one run of the operator that must fail at start-up, before it contacts
// any API server.
const configErrorTimeout = 30 * time.Second

// unreachableKubeconfig points at a port nothing listens on: the cases below must fail before the
// operator ever dials it.
const unreachableKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: nowhere
  context:
    cluster: nowhere
    user: nobody
current-context: nowhere
users:
- name: nobody
  user:
    token: not-a-secret
`

// TestInvalidConfigurationExitsNonZero runs the real binary with bad configuration and checks the
// exit code and that the message on stderr names what to change.
func TestInvalidConfigurationExitsNonZero(t *testing.T) {
	t.Parallel()
	binary := operatorBinary(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(unreachableKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		args     []string
		env      []string
		wantCode int
		wantText []string
		// outsidePod marks a case that relies on the operator not finding a Pod namespace file.
		outsidePod bool
	}{
		{
			name:     "concurrency zero",
			args:     []string{"--max-concurrent-reconciles=0"},
			wantCode: 2,
			wantText: []string{"--max-concurrent-reconciles", "at least 1"},
		},
		{
			name:     "unknown flag",
			args:     []string{"--no-such-flag"},
			wantCode: 2,
			wantText: []string{"-no-such-flag", "--help"},
		},
		{
			name:     "image repository with a tag from the environment",
			env:      []string{"ETCD_OPERATOR_ETCD_IMAGE_REPOSITORY=quay.io/coreos/etcd:v3.6.0"},
			wantCode: 2,
			wantText: []string{"ETCD_OPERATOR_ETCD_IMAGE_REPOSITORY", "--etcd-image-repository", "v3.6.0"},
		},
		{
			name:     "malformed namespace list",
			args:     []string{"--watch-namespaces=team-a,,team-b"},
			wantCode: 2,
			wantText: []string{"--watch-namespaces", "empty"},
		},
		{
			name:       "leader election outside a cluster without a namespace",
			args:       []string{"--kubeconfig=" + kubeconfig, "--leader-elect=true"},
			wantCode:   1,
			wantText:   []string{"--leader-election-namespace", "ETCD_OPERATOR_LEADER_ELECTION_NAMESPACE", "--leader-elect=false"},
			outsidePod: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.outsidePod && inPod() {
				t.Skip("this test runs in a Pod, so the operator finds its namespace and needs no flag")
			}
			ctx, cancel := context.WithTimeout(t.Context(), configErrorTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, tt.args...)
			cmd.Env = append(withoutOperatorEnv(os.Environ()), tt.env...)
			out, err := cmd.CombinedOutput()
			code, err := exitCode(err)
			if err != nil {
				t.Fatalf("running the operator: %v\n%s", err, out)
			}
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d; output:\n%s", code, tt.wantCode, out)
			}
			for _, want := range tt.wantText {
				if !strings.Contains(string(out), want) {
					t.Errorf("output does not mention %q:\n%s", want, out)
				}
			}
		})
	}
}

// withoutOperatorEnv drops ETCD_OPERATOR_* variables of the developer's shell, so that only the
// test decides the operator's configuration.
func withoutOperatorEnv(env []string) []string {
	kept := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "ETCD_OPERATOR_") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			kept = append(kept, kv)
		}
	}
	return kept
}

// inPod reports whether the kubelet mounted a service-account namespace file into this process.
func inPod() bool {
	_, err := os.Stat("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	return err == nil
}
