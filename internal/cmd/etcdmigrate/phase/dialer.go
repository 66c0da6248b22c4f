package phase

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/portforward"
)

// PortForwardDialer reaches each Running member Pod's client port through an API-server
// port-forward, as kubectl-etcd does: etcd-migrate runs from a person's machine.
type PortForwardDialer struct {
	REST *rest.Config
}

var _ Dialer = (*PortForwardDialer)(nil)

// Dial implements Dialer. Pods that cannot be forwarded are left out; with none, it fails.
func (d *PortForwardDialer) Dial(ctx context.Context, t Target) (*Session, error) {
	fwds := map[string]*portforward.Forward{}
	stop := func() {
		for _, f := range fwds {
			f.Close()
		}
	}
	var errs []error
	for i := range t.Pods {
		p := &t.Pods[i]
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		f, err := portforward.Open(ctx, d.REST, p.Namespace, p.Name, int(legacy.ClientPort))
		if err != nil {
			errs = append(errs, fmt.Errorf("port-forward to Pod %s: %w", p.Name, err))
			continue
		}
		fwds[p.Name] = f
	}
	if len(fwds) == 0 {
		return nil, errors.Join(append(errs, errors.New("no Running Pod could be reached"))...)
	}
	endpoints := map[string]string{}
	for name, f := range fwds {
		endpoints[name] = t.Scheme + "://127.0.0.1:" + strconv.Itoa(f.LocalPort())
	}
	conn, err := Connect(ctx, t, endpoints)
	if err != nil {
		stop()
		return nil, err
	}
	return &Session{Etcd: &closing{Etcd: conn, stop: stop}, Endpoints: endpoints}, nil
}

// Connect opens an etcd client to endpoints (Pod name → client URL) with t's TLS.
func Connect(ctx context.Context, t Target, endpoints map[string]string) (*etcdclient.Conn, error) {
	urls := make([]string, 0, len(endpoints))
	for _, n := range slices.Sorted(maps.Keys(endpoints)) {
		urls = append(urls, endpoints[n])
	}
	return etcdclient.New(ctx, etcdclient.Config{Endpoints: urls, TLS: t.TLS, TLSDigest: t.TLSDigest, Username: t.Username, Password: t.Password})
}

// closing stops the port-forwards with the client.
type closing struct {
	Etcd
	stop func()
}

func (c *closing) Close() error {
	err := c.Etcd.Close()
	c.stop()
	return err
}
