// Package tunnel reaches a cluster's etcd from a person's machine: one API-server port-forward
// per member Pod to its client port, and an etcd client over the forwarded ports with the TLS
// identity and credentials the cluster's spec names, verifying a member's DNS name as the
// operator does (docs/kubectl-etcd.md, "How it connects").
package tunnel

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdaccess"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/portforward"
)

// clientPort is etcd's client port in member Pods (docs/api.md, "Ports").
const clientPort = 2379

// Dialer opens etcd sessions through port-forwards.
type Dialer struct {
	REST   *rest.Config
	Reader client.Reader
	// CredentialsSecret, when set, is a basic-auth Secret ([namespace/]name) to authenticate
	// with instead of the cluster's root credentials.
	CredentialsSecret string
	// PodTLS are the Secrets --ca-secret and --client-cert-secret name, for DialPod.
	PodTLS PodTLS
}

var _ invocation.EtcdDialer = (*Dialer)(nil)

// Dial forwards a local port to each Pod and connects over them. Pods that cannot be forwarded
// (not running) are left out; Dial fails only when none can.
func (d *Dialer) Dial(ctx context.Context, c *etcdv1alpha2.EtcdCluster, pods []corev1.Pod) (*invocation.EtcdSession, error) {
	if len(pods) == 0 {
		return nil, fmt.Errorf("no member Pod of %s/%s exists to reach etcd through", c.Namespace, c.Name)
	}
	fwds, err := d.forwardAll(ctx, pods)
	if err != nil {
		return nil, err
	}
	stop := func() {
		for _, f := range fwds {
			f.Close()
		}
	}
	endpoints := map[string]string{}
	scheme := "http"
	if etcdaccess.ClientTLS(c) {
		scheme = "https"
	}
	for name, f := range fwds {
		endpoints[name] = (&url.URL{Scheme: scheme, Host: "127.0.0.1:" + strconv.Itoa(f.LocalPort())}).String()
	}
	names := slices.Sorted(maps.Keys(endpoints))
	urls := make([]string, 0, len(names))
	for _, n := range names {
		urls = append(urls, endpoints[n])
	}
	cfg, err := etcdaccess.Config(ctx, d.Reader, c, urls, desired.MemberHost(names[0], desired.HeadlessServiceName(c.Name), c.Namespace))
	if err == nil && d.CredentialsSecret != "" {
		cfg.Username, cfg.Password, err = basicAuth(ctx, d.Reader, c.Namespace, d.CredentialsSecret)
	}
	if err != nil {
		stop()
		return nil, err
	}
	conn, err := etcdclient.New(ctx, cfg)
	if err != nil {
		stop()
		return nil, err
	}
	return &invocation.EtcdSession{Etcd: &closing{Conn: conn, stop: stop}, Endpoints: endpoints}, nil
}

// forwardAll opens the forwards in parallel: each costs a round trip to the API server and a
// stream upgrade, and status must answer within a second.
func (d *Dialer) forwardAll(ctx context.Context, pods []corev1.Pod) (map[string]*portforward.Forward, error) {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		out  = map[string]*portforward.Forward{}
		errs []error
	)
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := portforward.Open(ctx, d.REST, p.Namespace, p.Name, clientPort)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("port-forward to Pod %s: %w", p.Name, err))
				return
			}
			out[p.Name] = f
		}()
	}
	wg.Wait()
	if len(out) == 0 {
		if len(errs) == 0 {
			return nil, errors.New("no member Pod is running to reach etcd through")
		}
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// basicAuth reads a kubernetes.io/basic-auth Secret ([namespace/]name); the username defaults
// to root.
func basicAuth(ctx context.Context, r client.Reader, ns, ref string) (string, string, error) {
	name := ref
	if before, after, ok := strings.Cut(ref, "/"); ok {
		ns, name = before, after
	}
	s := &corev1.Secret{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		return "", "", fmt.Errorf("reading --credentials-secret %s/%s: %w", ns, name, err)
	}
	password := string(s.Data[corev1.BasicAuthPasswordKey])
	if password == "" {
		return "", "", invocation.Usagef("--credentials-secret %s/%s has no %q key: give a kubernetes.io/basic-auth Secret", ns, name, corev1.BasicAuthPasswordKey)
	}
	user := string(s.Data[corev1.BasicAuthUsernameKey])
	if user == "" {
		user = etcdaccess.RootUser
	}
	return user, password, nil
}

// closing closes the forwards with the client.
type closing struct {
	*etcdclient.Conn
	stop func()
}

func (c *closing) Close() error {
	err := c.Conn.Close()
	c.stop()
	return err
}
