// Package invocationtest builds invocation.Deps for unit tests of kubectl-etcd's commands: a
// fake Kubernetes client holding the given objects, a scripted etcd, a fixed clock and a
// scripted prompter. Fakes are for the commands' plans and output only; the real plugin is
// driven against the local cluster in test/e2e (docs/kubectl-etcd.md, "Tests").
package invocationtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// Now is the fake clock's time.
var Now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// Env is a test's Deps and what they recorded.
type Env struct {
	Deps     *invocation.Deps
	Out      *bytes.Buffer
	ErrOut   *bytes.Buffer
	Etcd     *Etcd
	Prompter *Prompter
	Clock    *clocktesting.FakeClock
}

// New returns Deps over objs in namespace ns, with default global flags.
func New(tb testing.TB, ns string, objs ...client.Object) *Env {
	tb.Helper()
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), etcdv1alpha2.AddToScheme(scheme)); err != nil {
		tb.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&etcdv1alpha2.EtcdCluster{}, &etcdv1alpha2.EtcdMember{}, &etcdv1alpha2.EtcdSnapshot{}).Build()
	e := &Env{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}, Etcd: &Etcd{}, Prompter: &Prompter{}, Clock: clocktesting.NewFakeClock(Now)}
	e.Deps = &invocation.Deps{
		Kube:      kube,
		Dialer:    e.Etcd,
		Clock:     e.Clock,
		Prompter:  e.Prompter,
		Out:       e.Out,
		ErrOut:    e.ErrOut,
		Namespace: ns,
		Globals:   invocation.NewGlobals(),
		Version:   "v0.0.0-test",
	}
	return e
}

// Prompter answers Confirm with Answer when Terminal is true.
type Prompter struct {
	Terminal bool
	Answer   bool
	// Asked are the questions asked.
	Asked []string
}

// Interactive reports whether the test pretends stdin is a terminal.
func (p *Prompter) Interactive() bool { return p.Terminal }

// Confirm records q and answers Answer.
func (p *Prompter) Confirm(q string) (bool, error) {
	p.Asked = append(p.Asked, q)
	return p.Answer, nil
}

// Etcd is a scripted etcd reached through every member Pod: Dial maps each Pod to the endpoint
// "fake://<pod>". Set the fields before the command runs; Calls records every call.
type Etcd struct {
	mu sync.Mutex
	// DialErr fails Dial.
	DialErr error
	Members []etcdclient.Member
	// Statuses by endpoint; an endpoint without one answers StatusErr.
	Statuses  map[string]etcdclient.Status
	StatusErr error
	Alarms    []etcdclient.Alarm
	// SnapshotData is what Snapshot streams.
	SnapshotData []byte
	// Errs fails the named method (e.g. "MoveLeader").
	Errs  map[string]error
	Calls []string
	// DialledPods are the Pods DialPod reached.
	DialledPods []string
}

// Endpoint is the endpoint Dial gives the Pod named pod.
func Endpoint(pod string) string { return "fake://" + pod }

// Dial opens a session whose endpoints are Endpoint(pod) for each Pod.
func (f *Etcd) Dial(_ context.Context, _ *etcdv1alpha2.EtcdCluster, pods []corev1.Pod) (*invocation.EtcdSession, error) {
	if f.DialErr != nil {
		return nil, f.DialErr
	}
	eps := map[string]string{}
	for _, p := range pods {
		eps[p.Name] = Endpoint(p.Name)
	}
	return &invocation.EtcdSession{Etcd: f, Endpoints: eps}, nil
}

// DialPod opens a session whose one endpoint is Endpoint(pod.Name); Dialled records the Pod.
func (f *Etcd) DialPod(_ context.Context, pod *corev1.Pod) (*invocation.EtcdSession, error) {
	if f.DialErr != nil {
		return nil, f.DialErr
	}
	f.mu.Lock()
	f.DialledPods = append(f.DialledPods, pod.Name)
	f.mu.Unlock()
	return &invocation.EtcdSession{Etcd: f, Endpoints: map[string]string{pod.Name: Endpoint(pod.Name)}}, nil
}

func (f *Etcd) record(format string, args ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := fmt.Sprintf(format, args...)
	f.Calls = append(f.Calls, call)
	return f.Errs[strings.Fields(call)[0]]
}

// MemberList answers Members.
func (f *Etcd) MemberList(context.Context) ([]etcdclient.Member, error) {
	return f.Members, f.record("MemberList")
}

// Status answers Statuses[ep], or StatusErr for an endpoint without one.
func (f *Etcd) Status(_ context.Context, ep string) (etcdclient.Status, error) {
	if err := f.record("Status %s", ep); err != nil {
		return etcdclient.Status{}, err
	}
	s, ok := f.Statuses[ep]
	if !ok {
		return etcdclient.Status{}, f.StatusErr
	}
	return s, nil
}

// AlarmList answers Alarms.
func (f *Etcd) AlarmList(context.Context) ([]etcdclient.Alarm, error) {
	return f.Alarms, f.record("AlarmList")
}

// AlarmDisarm records the call and answers the alarm disarmed.
func (f *Etcd) AlarmDisarm(_ context.Context, a etcdclient.Alarm) ([]etcdclient.Alarm, error) {
	return []etcdclient.Alarm{a}, f.record("AlarmDisarm %s %s", etcdclient.FormatID(a.MemberID), a.Type)
}

// MoveLeader records the call.
func (f *Etcd) MoveLeader(_ context.Context, to uint64) error {
	return f.record("MoveLeader %s", etcdclient.FormatID(to))
}

// Compact records the call.
func (f *Etcd) Compact(_ context.Context, rev int64, physical bool) error {
	return f.record("Compact %d physical=%t", rev, physical)
}

// Defragment records the call.
func (f *Etcd) Defragment(_ context.Context, ep string) error {
	return f.record("Defragment %s", ep)
}

// Snapshot streams SnapshotData.
func (f *Etcd) Snapshot(_ context.Context, ep string) (io.ReadCloser, error) {
	if err := f.record("Snapshot %s", ep); err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(f.SnapshotData)), nil
}

// Close does nothing.
func (f *Etcd) Close() error { return nil }
