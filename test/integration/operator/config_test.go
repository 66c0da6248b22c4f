package operator_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/health"
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
			name:     "grace with a unit typed wrong",
			args:     []string{"--member-failure-grace=3ms"},
			wantCode: 2,
			wantText: []string{"--member-failure-grace", "at least 1s", "3m0s"},
		},
		{
			name:     "grace from the environment without a unit",
			env:      []string{"ETCD_OPERATOR_ORPHAN_MEMBER_GRACE=60"},
			wantCode: 2,
			wantText: []string{"ETCD_OPERATOR_ORPHAN_MEMBER_GRACE", "--orphan-member-grace", "at least 1s"},
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

// TestGraceFlagReachesTheMemberController runs the real binary with --pending-grace=2s: once the
// scheduler refuses the seed member's Pod, the member is Healthy=False/Unschedulable within
// seconds, where the default grace would take 5 minutes. There is no scheduler or kubelet here,
// so the test reports the refusal itself. It does not run in parallel with the other tests:
// their operators watch every namespace with the default graces and hold Leases of their own,
// so they would write this member's Healthy condition too.
func TestGraceFlagReachesTheMemberController(t *testing.T) {
	ctx := t.Context()
	namespace := createNamespace(ctx, t)
	removeClustersAfterTest(t, namespace)
	op := startOperator(t, namespace, "short pending grace", "--pending-grace=2s")
	op.waitForControllers(ctx, t, controllerNames...)

	cluster := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "etcd"},
		Spec:       etcdv1alpha2.EtcdClusterSpec{Version: "3.6.5", Replicas: ptr.To[int32](1)},
	}
	if err := admin.Create(ctx, cluster); err != nil {
		t.Fatalf("creating EtcdCluster: %v", err)
	}
	var pod corev1.Pod
	op.poll(ctx, t, "the seed member's Pod", func(ctx context.Context) error {
		var pods corev1.PodList
		if err := admin.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
			return err
		}
		if len(pods.Items) != 1 {
			return fmt.Errorf("%d Pods", len(pods.Items))
		}
		pod = pods.Items[0]
		return nil
	})
	base := pod.DeepCopy()
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled,
		Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.Now(),
		Message: "0/3 nodes are available: 3 Insufficient memory."})
	if err := admin.Status().Patch(ctx, &pod, client.MergeFrom(base)); err != nil {
		t.Fatalf("reporting the scheduler's refusal on Pod %s: %v", pod.Name, err)
	}
	op.poll(ctx, t, "Healthy=False/Unschedulable on the seed member", func(ctx context.Context) error {
		m := &etcdv1alpha2.EtcdMember{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: pod.Name}, m); err != nil {
			return err
		}
		h := meta.FindStatusCondition(m.Status.Conditions, etcdv1alpha2.ConditionHealthy)
		if h == nil || h.Status != metav1.ConditionFalse || h.Reason != health.ReasonUnschedulable {
			return fmt.Errorf("Healthy = %+v", h)
		}
		return nil
	})
	op.stop(t)
}
