package etcdread_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// state is a cluster "demo" whose members each have a Pod in phase.
func state(phase corev1.PodPhase, names ...string) *clusterread.State {
	s := &clusterread.State{
		Cluster: &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "demo"}},
		Pods:    map[string]*corev1.Pod{},
	}
	for _, n := range names {
		s.Members = append(s.Members, etcdv1alpha2.EtcdMember{
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: n},
			Spec:       etcdv1alpha2.EtcdMemberSpec{ClusterName: "demo"},
		})
		s.Pods[n] = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: n, UID: types.UID(n + "-uid")},
			Status:     corev1.PodStatus{Phase: phase},
		}
	}
	return s
}

// countingDialer counts dials.
type countingDialer struct {
	invocation.EtcdDialer
	mu    sync.Mutex
	dials int
}

func (c *countingDialer) Dial(ctx context.Context, cl *etcdv1alpha2.EtcdCluster, pods []corev1.Pod) (*invocation.EtcdSession, error) {
	c.mu.Lock()
	c.dials++
	c.mu.Unlock()
	return c.EtcdDialer.Dial(ctx, cl, pods)
}

func TestNoEtcdNeverDials(t *testing.T) {
	t.Parallel()
	e := invocationtest.New(t, "tenant")
	dialer := &countingDialer{EtcdDialer: e.Etcd}
	e.Deps.Dialer = dialer
	e.Deps.Globals.NoEtcd = true
	r := etcdread.NewReader(e.Deps)
	defer r.Close()
	v := r.Read(t.Context(), state(corev1.PodRunning, "demo-a"), etcdread.What{Statuses: true, Alarms: true})
	if v.State != etcdread.StateSkipped || dialer.dials != 0 || len(e.Etcd.Calls) != 0 {
		t.Errorf("--no-etcd: state %s, %d dials, calls %v; want skipped, no dial, no call", v.State, dialer.dials, e.Etcd.Calls)
	}
}

func TestNoRunningPodIsNotAFailure(t *testing.T) {
	t.Parallel()
	e := invocationtest.New(t, "tenant")
	dialer := &countingDialer{EtcdDialer: e.Etcd}
	e.Deps.Dialer = dialer
	r := etcdread.NewReader(e.Deps)
	defer r.Close()
	v := r.Read(t.Context(), state(corev1.PodPending, "demo-a"), etcdread.What{})
	if v.State != etcdread.StateNoRunningPod || dialer.dials != 0 || len(v.Errors()) != 0 {
		t.Errorf("state %s, %d dials, errors %v; want %s without a dial", v.State, dialer.dials, v.Errors(), etcdread.StateNoRunningPod)
	}
}

func TestDialFailureIsRecordedWithoutAddresses(t *testing.T) {
	t.Parallel()
	e := invocationtest.New(t, "tenant")
	e.Etcd.DialErr = errors.New("port-forward to Pod demo-a: dial tcp 10.0.0.7:2379: connection refused")
	r := etcdread.NewReader(e.Deps)
	defer r.Close()
	v := r.Read(t.Context(), state(corev1.PodRunning, "demo-a"), etcdread.What{})
	if v.State != etcdread.StateUnreachable || !errors.Is(v.DialErr, e.Etcd.DialErr) {
		t.Fatalf("state %s, err %v; want unreachable wrapping the dial error", v.State, v.DialErr)
	}
	want := "reaching etcd of tenant/demo: port-forward to Pod demo-a: dial tcp <address>: connection refused"
	if got := v.Errors(); len(got) != 1 || got[0] != want {
		t.Errorf("errors %q, want [%q]", got, want)
	}
}

// barrierEtcd answers Status only once n calls are in flight at the same time, so that calls
// made one after another time out.
type barrierEtcd struct {
	*invocationtest.Etcd
	n       int
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func (b *barrierEtcd) Dial(_ context.Context, _ *etcdv1alpha2.EtcdCluster, pods []corev1.Pod) (*invocation.EtcdSession, error) {
	eps := map[string]string{}
	for _, p := range pods {
		eps[p.Name] = invocationtest.Endpoint(p.Name)
	}
	return &invocation.EtcdSession{Etcd: b, Endpoints: eps}, nil
}

func (b *barrierEtcd) Status(ctx context.Context, ep string) (etcdclient.Status, error) {
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return b.Etcd.Status(ctx, ep)
	case <-ctx.Done():
		return etcdclient.Status{}, ctx.Err()
	}
}

func TestStatusesAreAskedInParallel(t *testing.T) {
	t.Parallel()
	e := invocationtest.New(t, "tenant")
	names := []string{"demo-a", "demo-b", "demo-c"}
	e.Etcd.Statuses = map[string]etcdclient.Status{}
	for i, n := range names {
		e.Etcd.Statuses[invocationtest.Endpoint(n)] = etcdclient.Status{ID: uint64(i + 1)}
	}
	e.Deps.Dialer = &barrierEtcd{Etcd: e.Etcd, n: len(names), all: make(chan struct{})}
	e.Deps.Globals.Timeout = 5 * time.Second
	r := etcdread.NewReader(e.Deps)
	defer r.Close()
	v := r.Read(t.Context(), state(corev1.PodRunning, names...), etcdread.What{Statuses: true, Alarms: true})
	if len(v.Statuses) != len(names) || len(v.StatusErrs) != 0 {
		t.Fatalf("statuses %v, errors %v; want all %d answered (calls made one by one never meet)", v.Statuses, v.StatusErrs, len(names))
	}
	for i, n := range names {
		if v.Statuses[n].ID != uint64(i+1) {
			t.Errorf("member %s got the status of member ID %d", n, v.Statuses[n].ID)
		}
	}
}

func TestEachCallIsBoundedByTimeout(t *testing.T) {
	t.Parallel()
	e := invocationtest.New(t, "tenant")
	// Two members: the barrier of three is never met, so every Status waits for its timeout.
	e.Deps.Dialer = &barrierEtcd{Etcd: e.Etcd, n: 3, all: make(chan struct{})}
	e.Deps.Globals.Timeout = 20 * time.Millisecond
	r := etcdread.NewReader(e.Deps)
	defer r.Close()
	v := r.Read(t.Context(), state(corev1.PodRunning, "demo-a", "demo-b"), etcdread.What{Statuses: true})
	if len(v.StatusErrs) != 2 || etcdread.ErrorKind(v.StatusErrs["demo-a"]) != "timeout" {
		t.Errorf("status errors %v, want both members timed out", v.StatusErrs)
	}
	if v.State != etcdread.StateReached || v.MembersErr != nil {
		t.Errorf("a member's timeout failed the read: state %s, MemberList %v", v.State, v.MembersErr)
	}
}

func TestSessionIsKeptWhilePodsStayTheSame(t *testing.T) {
	t.Parallel()
	e := invocationtest.New(t, "tenant")
	dialer := &countingDialer{EtcdDialer: e.Etcd}
	e.Deps.Dialer = dialer
	r := etcdread.NewReader(e.Deps)
	defer r.Close()
	s := state(corev1.PodRunning, "demo-a", "demo-b")
	r.Read(t.Context(), s, etcdread.What{})
	r.Read(t.Context(), s, etcdread.What{})
	if dialer.dials != 1 {
		t.Errorf("%d dials for two reads over the same Pods, want 1", dialer.dials)
	}
	s.Pods["demo-b"].UID = "recreated"
	r.Read(t.Context(), s, etcdread.What{})
	if dialer.dials != 2 {
		t.Errorf("%d dials after a Pod was recreated, want 2", dialer.dials)
	}
}

func TestErrorKind(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]string{
		etcdclient.NewError("Status", etcdclient.ErrTimeout):          "timeout",
		fmt.Errorf("x: %w", context.DeadlineExceeded):                 "timeout",
		etcdclient.NewError("Status", etcdclient.ErrUnavailable):      "unavailable",
		etcdclient.NewError("Status", etcdclient.ErrAuthFailed):       "auth failed",
		etcdclient.NewError("Status", etcdclient.ErrPermissionDenied): "permission denied",
		etcdclient.NewError("Status", nil):                            "error",
		nil:                                                           "",
	} {
		if got := etcdread.ErrorKind(err); got != want {
			t.Errorf("ErrorKind(%v) = %q, want %q", err, got, want)
		}
	}
}

// droppingDialer reaches every Pod but one, as the tunnel does when one port-forward fails.
type droppingDialer struct {
	invocation.EtcdDialer
	drop string
}

func (d droppingDialer) Dial(ctx context.Context, c *etcdv1alpha2.EtcdCluster, pods []corev1.Pod) (*invocation.EtcdSession, error) {
	sess, err := d.EtcdDialer.Dial(ctx, c, pods)
	if err == nil {
		delete(sess.Endpoints, d.drop)
	}
	return sess, err
}

func TestMembersNotReachedSayWhy(t *testing.T) {
	t.Parallel()
	e := invocationtest.New(t, "tenant")
	e.Etcd.Statuses = map[string]etcdclient.Status{invocationtest.Endpoint("demo-a"): {ID: 1}}
	e.Deps.Dialer = droppingDialer{EtcdDialer: e.Etcd, drop: "demo-b"}
	s := state(corev1.PodRunning, "demo-a", "demo-b", "demo-c")
	s.Pods["demo-c"].Status.Phase = corev1.PodPending
	r := etcdread.NewReader(e.Deps)
	defer r.Close()
	v := r.Read(t.Context(), s, etcdread.What{Statuses: true})
	got := map[string]string{}
	for m, err := range v.StatusErrs {
		got[m] = etcdread.ErrorKind(err)
	}
	want := map[string]string{"demo-b": "no port-forward", "demo-c": "Pod not running"}
	if len(v.Statuses) != 1 || !maps.Equal(got, want) {
		t.Errorf("statuses %v, errors %v; want demo-a answered and %v", v.Statuses, got, want)
	}
}
