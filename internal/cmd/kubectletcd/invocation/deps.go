package invocation

import (
	"context"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// Deps are what a command works with. Tests give fakes; Build gives the real ones.
type Deps struct {
	// Kube reads and patches the custom resources, Pods and Secrets.
	Kube client.Client
	// Dialer reaches etcd.
	Dialer EtcdDialer
	// Clock tells the time (for ages, deadlines and --wait).
	Clock clock.Clock
	// Prompter asks the [y/N] question of --apply.
	Prompter Prompter
	// Out receives the data; ErrOut progress, warnings and errors.
	Out, ErrOut io.Writer
	// Namespace is where the named cluster lives.
	Namespace string
	// Globals are the global flags.
	Globals *Globals
	// Version is the plugin's version.
	Version string
}

// Etcd is every etcd call kubectl-etcd makes; nothing else of clientv3 is reachable.
type Etcd interface {
	MemberList(ctx context.Context) ([]etcdclient.Member, error)
	Status(ctx context.Context, endpoint string) (etcdclient.Status, error)
	AlarmList(ctx context.Context) ([]etcdclient.Alarm, error)
	AlarmDisarm(ctx context.Context, alarm etcdclient.Alarm) ([]etcdclient.Alarm, error)
	MoveLeader(ctx context.Context, to uint64) error
	Compact(ctx context.Context, rev int64, physical bool) error
	Defragment(ctx context.Context, endpoint string) error
	Snapshot(ctx context.Context, endpoint string) (io.ReadCloser, error)
	Close() error
}

// EtcdSession is a connection to one cluster's etcd through tunnels to its members.
type EtcdSession struct {
	Etcd
	// Endpoints maps each member reached (its EtcdMember name, which is also its Pod's name) to
	// the endpoint that reaches it in Etcd's per-member calls.
	Endpoints map[string]string
}

// EtcdDialer opens sessions.
type EtcdDialer interface {
	// Dial reaches c's etcd through pods (member Pods, Ready or not: a member that does not
	// answer is reported, not hidden), with c's TLS and credentials.
	Dial(ctx context.Context, c *etcdv1alpha2.EtcdCluster, pods []corev1.Pod) (*EtcdSession, error)
	// DialPod reaches the etcd of pod alone, through one port-forward, with the connection
	// derived from the Pod (compatibility mode); the session's Endpoints has the Pod's name.
	DialPod(ctx context.Context, pod *corev1.Pod) (*EtcdSession, error)
}

// Prompter asks a yes/no question of the person at the terminal.
type Prompter interface {
	// Interactive reports whether a person can answer (stdin is a terminal).
	Interactive() bool
	// Confirm asks question and reports whether the answer was yes.
	Confirm(question string) (bool, error)
}

// Factory builds Deps once the flags are parsed; commands call it in their RunE.
type Factory func() (*Deps, error)
