package status_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/status"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// memberDown: etcd-x7k2p's Pod runs but its etcd does not answer.
func memberDown() *world {
	w := healthy()
	delete(w.statuses, "etcd-x7k2p")
	w.members[2].Status.Conditions = []metav1.Condition{
		cond(etcdv1alpha2.ConditionReady, metav1.ConditionFalse, "PodNotReady", "readiness probe failed"),
		cond(etcdv1alpha2.ConditionUpdated, metav1.ConditionTrue, "TemplateCurrent", ""),
		cond(etcdv1alpha2.ConditionHealthy, metav1.ConditionUnknown, "Unreachable", "etcd does not answer"),
	}
	c := &w.cluster.Status
	c.ReadyMembers = 2
	c.Conditions[0] = cond(etcdv1alpha2.ConditionAvailable, metav1.ConditionTrue, "QuorumAvailable", "2 of 3 voters are Ready")
	c.Conditions[2] = cond(etcdv1alpha2.ConditionDegraded, metav1.ConditionTrue, "MembersUnhealthy", "not healthy: etcd-x7k2p (Unreachable)")
	w.pdb.Status.DisruptionsAllowed = 0
	return w
}

// learner: scaling 3 → 5, the fourth member joined as a learner and catches up; a newer
// generation waits for the deadline.
func learner() *world {
	w := healthy()
	w.member("etcd-q2w9z", 0x3f6b2d90c1e8a457, "node-d", true, 950, 20*mib, 20*mib)
	w.members[3].Status.Conditions[0] = cond(etcdv1alpha2.ConditionReady, metav1.ConditionFalse, "Learner", "learners are never Ready")
	c := w.cluster
	c.Generation, c.Spec.Replicas = 9, ptr.To[int32](5)
	c.Status.ObservedGeneration = 8
	c.Status.ProgressDeadline = ptr.To(metav1.NewTime(invocationtest.Now.Add(4 * time.Minute)))
	c.Status.Conditions[1] = cond(etcdv1alpha2.ConditionProgressing, metav1.ConditionTrue, "PromotingLearner",
		"promoting learner etcd-q2w9z once it is in sync; generation 9 pending")
	return w
}

// Canaries: Secret values that must never be printed.
const (
	canaryPassword = "canary-root-password-9f8e7d"
	canaryKey      = "canary-private-key-material-1a2b3c"
)

// authMTLS: client mTLS and peer mTLS from the user's Secrets, auth on.
func authMTLS() *world {
	w := healthy()
	ref := func(n string) *corev1.LocalObjectReference { return &corev1.LocalObjectReference{Name: n} }
	w.cluster.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{
		Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: ref("etcd-server-tls"), OperatorClientSecretRef: ref("etcd-operator-client-tls")},
		Peer:   &etcdv1alpha2.PeerTLS{SecretRef: ref("etcd-peer-tls")},
	}
	w.cluster.Spec.Auth = &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: ref("etcd-root")}
	w.cluster.Status.AuthEnabled = true
	for _, name := range []string{"etcd-server-tls", "etcd-operator-client-tls", "etcd-peer-tls"} {
		w.secrets = append(w.secrets, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{"tls.crt": []byte("cert"), "tls.key": []byte(canaryKey), "ca.crt": []byte("ca")},
		})
	}
	w.secrets = append(w.secrets, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd-root"},
		Type:       corev1.SecretTypeBasicAuth,
		Data:       map[string][]byte{"username": []byte("root"), "password": []byte(canaryPassword)},
	})
	for i := range w.list {
		for j, u := range w.list[i].PeerURLs {
			w.list[i].PeerURLs[j] = strings.Replace(u, "http://", "https://", 1)
		}
	}
	return w
}

func run(t *testing.T, e *invocationtest.Env) error {
	t.Helper()
	return status.Run(t.Context(), status.Options{Cluster: "etcd"}, e.Deps)
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for name, w := range map[string]func() *world{
		"healthy":     healthy,
		"member-down": memberDown,
		"learner":     learner,
		"no-etcd":     healthy,
		"auth-mtls":   authMTLS,
	} {
		for _, output := range []string{invocation.OutputText, invocation.OutputJSON} {
			t.Run(name+"/"+output, func(t *testing.T) {
				t.Parallel()
				e := w().env(t)
				e.Deps.Globals.Output = output
				e.Deps.Globals.NoEtcd = name == "no-etcd"
				if err := run(t, e); err != nil {
					t.Fatal(err)
				}
				golden(t, name+"."+output+".golden", e.Out.String())
				if name == "no-etcd" && len(e.Etcd.Calls) > 0 {
					t.Errorf("--no-etcd called etcd: %v", e.Etcd.Calls)
				}
			})
		}
	}
}

func TestAsksEachMemberOnceAndTheClusterOnce(t *testing.T) {
	t.Parallel()
	e := healthy().env(t)
	if err := run(t, e); err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(e.Etcd.Calls)
	slices.Sort(got)
	want := []string{"AlarmList", "MemberList", "Status fake://etcd-4kq9d", "Status fake://etcd-7vx2m", "Status fake://etcd-x7k2p"}
	if !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
}

func TestSecretsNeverAppear(t *testing.T) {
	t.Parallel()
	for _, output := range []string{invocation.OutputText, invocation.OutputJSON, invocation.OutputYAML} {
		e := authMTLS().env(t)
		e.Deps.Globals.Output = output
		if err := run(t, e); err != nil {
			t.Fatal(err)
		}
		all := e.Out.String() + e.ErrOut.String()
		for _, secret := range []string{canaryPassword, canaryKey, "canary"} {
			for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))} {
				if strings.Contains(all, form) {
					t.Errorf("-o %s printed Secret material %q", output, form)
				}
			}
		}
	}
}

func TestDialFailureShowsTheCustomResourcesAndFails(t *testing.T) {
	t.Parallel()
	e := healthy().env(t)
	e.Etcd.DialErr = errors.New("port-forward to Pod etcd-4kq9d: pods \"etcd-4kq9d\" is forbidden")
	err := run(t, e)
	if invocation.Code(err) != invocation.ExitError || !strings.Contains(err.Error(), "--no-etcd") {
		t.Fatalf("got %v (exit %d), want exit 1 naming --no-etcd", err, invocation.Code(err))
	}
	out := e.Out.String()
	for _, want := range []string{"etcd-x7k2p", "d4e8f61a97c0b2e5", "etcd unreachable (reaching etcd of tenant-a/etcd: port-forward"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPausedClusterWithoutPodsIsNoFailure(t *testing.T) {
	t.Parallel()
	w := healthy()
	w.pods = nil
	w.cluster.Spec.Replicas = ptr.To[int32](0)
	e := w.env(t)
	if err := run(t, e); err != nil {
		t.Fatalf("got %v, want success: a paused cluster has no Pod to dial", err)
	}
	if out := e.Out.String(); !strings.Contains(out, "no member Pod is running") || !strings.Contains(out, "no Pod") {
		t.Errorf("output does not say why etcd was not asked:\n%s", out)
	}
}

func TestAlarmsNameTheirMember(t *testing.T) {
	t.Parallel()
	w := healthy()
	w.alarms = []etcdclient.Alarm{{MemberID: 0xa03d5c9e11b2f408, Type: etcdclient.AlarmNoSpace}, {MemberID: 0x42, Type: etcdclient.AlarmCorrupt}}
	e := w.env(t)
	if err := run(t, e); err != nil {
		t.Fatal(err)
	}
	if out := e.Out.String(); !strings.Contains(out, "alarms NOSPACE etcd-7vx2m, CORRUPT 42") {
		t.Errorf("alarms not shown by member:\n%s", out)
	}
}

func TestMissingClusterNamesTheOnesThatExist(t *testing.T) {
	t.Parallel()
	e := healthy().env(t)
	err := status.Run(t.Context(), status.Options{Cluster: "ectd"}, e.Deps)
	if err == nil || !strings.Contains(err.Error(), "namespace tenant-a has: etcd") {
		t.Fatalf("got %v, want the existing clusters named", err)
	}
}

// syncBuffer is written by the watch and read by the test.
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

func TestWatchRedrawsEveryIntervalUntilInterrupted(t *testing.T) {
	t.Parallel()
	e := healthy().env(t)
	out := &syncBuffer{}
	e.Deps.Out = out
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- status.Run(ctx, status.Options{Cluster: "etcd", Watch: true}, e.Deps) }()
	frames := func() int { return strings.Count(out.String(), "Cluster  tenant-a/etcd") }
	for want := 1; want <= 3; want++ {
		waitFor(t, func() bool { return frames() == want && e.Clock.HasWaiters() })
		e.Clock.Step(status.WatchInterval)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("an interrupted watch returned %v, want nil", err)
	}
	// Not a terminal: frames follow one another, separated by a blank line, never cleared.
	if got := out.String(); strings.Contains(got, "\x1b[") || !strings.Contains(got, "\n\nCluster  tenant-a/etcd") {
		t.Errorf("frames not separated by a blank line, or ANSI codes written to a non-terminal:\n%q", got)
	}
	if n := strings.Count(strings.Join(e.Etcd.Calls, "\n"), "MemberList"); n < 3 {
		t.Errorf("%d MemberList calls over 3 frames: etcd is not asked again each frame", n)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestBytes(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{
		0: "0", 1023: "1023", 1024: "1Ki", 1536: "1.5Ki", 48 * mib: "48Mi", 31*mib + 400*1024: "31Mi",
		3 * mib / 2: "1.5Mi", 8 << 30: "8Gi", 10<<30 + 1: "10Gi",
	} {
		if got := status.Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
