package migrate

import (
	"io"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/phase"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
)

// Deps are Run's dependencies; tests replace every one.
type Deps struct {
	Kube     client.Client
	Dialer   phase.Dialer
	Clock    clock.Clock
	Prompter invocation.Prompter
	// Out receives the plan and the summary; ErrOut progress and warnings.
	Out, ErrOut io.Writer
	// Namespace is the scope, "" for all namespaces.
	Namespace string
	// Poll is the interval of every wait (1 s when zero); VerifyTimeout bounds the wait for
	// Available=True after the hand-over (2 min when zero).
	Poll          time.Duration
	VerifyTimeout time.Duration
}
