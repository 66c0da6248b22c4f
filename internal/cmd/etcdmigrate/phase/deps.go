package phase

import (
	"context"
	"crypto/tls"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// Etcd is what etcd-migrate asks of a legacy cluster's etcd.
type Etcd interface {
	MemberList(ctx context.Context) ([]etcdclient.Member, error)
	Status(ctx context.Context, endpoint string) (etcdclient.Status, error)
	AlarmList(ctx context.Context) ([]etcdclient.Alarm, error)
	HashKV(ctx context.Context, endpoint string, rev int64) (etcdclient.HashKV, error)
	AuthEnabled(ctx context.Context) (bool, error)
	AuthDisable(ctx context.Context) error
	Close() error
}

// Session is a connection to one cluster's etcd and the endpoint of each member Pod it reaches,
// by Pod name.
type Session struct {
	Etcd
	Endpoints map[string]string
}

// Target says how to reach one legacy cluster's members: through which Pods, with which scheme
// and TLS (the legacy client identity, docs/migration.md "Phases").
type Target struct {
	Namespace, Cluster string
	// Pods are the member Pods; the dialer uses the Running ones.
	Pods []corev1.Pod
	// Scheme is http or https.
	Scheme string
	// TLS, when set, verifies the members and presents the legacy client certificate;
	// TLSDigest identifies its material.
	TLS       *tls.Config
	TLSDigest string
	// Username and Password authenticate when auth is on (an adopted cluster, once the
	// operator turned it on again).
	Username, Password string
}

// Dialer opens etcd sessions. The command port-forwards to each Pod (PortForwardDialer); the
// integration tests dial etcd processes directly.
type Dialer interface {
	Dial(ctx context.Context, t Target) (*Session, error)
}
