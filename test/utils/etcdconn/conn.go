package etcdconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
)

// ClientPort is etcd's standard client port, which member Pods expose.
const ClientPort = 2379

const (
	// DefaultDialTimeout bounds the initial connection. clientv3 blocks in New until one
	// endpoint accepts, so an unreachable cluster fails here rather than on the first call.
	DefaultDialTimeout = 5 * time.Second
	// keepAliveTime and keepAliveTimeout make a client notice a silently dead member (a
	// stopped node drops packets rather than resetting connections) within a few seconds.
	keepAliveTime    = 5 * time.Second
	keepAliveTimeout = 2 * time.Second
)

// ErrNotIP is returned for an endpoint whose host is not an IP literal.
var ErrNotIP = errors.New("endpoint host is not an IP address; host-side tests must not resolve names")

// ErrNoPodIP is returned for a Pod that has no IP yet.
var ErrNoPodIP = errors.New("pod has no IP")

// Options describe how to reach etcd.
type Options struct {
	// Endpoints are client URLs with IP-literal hosts, e.g. https://10.244.1.5:2379.
	Endpoints []string
	// TLS, when set, is used for every connection; endpoints must then use https.
	TLS *tls.Config
	// Username and Password authenticate when etcd auth is on.
	Username, Password string
	// DialTimeout bounds the initial connection; DefaultDialTimeout when zero.
	DialTimeout time.Duration
}

// New dials etcd. The caller closes the client.
func New(ctx context.Context, opts Options) (*clientv3.Client, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("dialing etcd: no endpoints")
	}
	for _, ep := range opts.Endpoints {
		if err := ValidateEndpoint(ep); err != nil {
			return nil, err
		}
	}
	timeout := opts.DialTimeout
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            opts.Endpoints,
		TLS:                  opts.TLS,
		Username:             opts.Username,
		Password:             opts.Password,
		DialTimeout:          timeout,
		DialKeepAliveTime:    keepAliveTime,
		DialKeepAliveTimeout: keepAliveTimeout,
		PermitWithoutStream:  true,
		Context:              ctx,
		// The client's own logs would drown test output; failures surface as errors.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("dialing etcd %v: %w", opts.Endpoints, err)
	}
	return c, nil
}

// ValidateEndpoint checks that ep is an http or https URL whose host is an IP literal with a
// port.
func ValidateEndpoint(ep string) error {
	u, err := url.Parse(ep)
	if err != nil {
		return fmt.Errorf("parsing endpoint %q: %w", ep, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("endpoint %q: scheme must be http or https", ep)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return fmt.Errorf("endpoint %q: %w", ep, err)
	}
	if net.ParseIP(host) == nil {
		return fmt.Errorf("endpoint %q: %w", ep, ErrNotIP)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("endpoint %q: bad port: %w", ep, err)
	}
	return nil
}

// Endpoint builds a client URL from an IP and a port.
func Endpoint(ip string, port int, useTLS bool) (string, error) {
	if net.ParseIP(ip) == nil {
		return "", fmt.Errorf("building endpoint from %q: %w", ip, ErrNotIP)
	}
	scheme := "http"
	if useTLS {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(ip, strconv.Itoa(port)), nil
}

// PodEndpoint returns the client URL of the etcd member in pod, by the Pod's IP.
func PodEndpoint(pod *corev1.Pod, port int, useTLS bool) (string, error) {
	if pod.Status.PodIP == "" {
		return "", fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, ErrNoPodIP)
	}
	return Endpoint(pod.Status.PodIP, port, useTLS)
}

// PodEndpoints returns the client URLs of the Pods that have an IP, and the names of those that
// do not yet.
func PodEndpoints(pods []corev1.Pod, port int, useTLS bool) (endpoints, withoutIP []string) {
	for i := range pods {
		ep, err := PodEndpoint(&pods[i], port, useTLS)
		if err != nil {
			withoutIP = append(withoutIP, pods[i].Name)
			continue
		}
		endpoints = append(endpoints, ep)
	}
	return endpoints, withoutIP
}

// TLSConfig builds a client TLS configuration from PEM data, as found in a kubernetes.io/tls
// Secret (ca.crt, tls.crt, tls.key). certPEM and keyPEM may be empty for server-only TLS.
// serverName is the name to verify the member's certificate against, typically
// <member>.<headless service>.<namespace>.svc; it is never resolved.
func TLSConfig(caPEM, certPEM, keyPEM []byte, serverName string) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("building etcd TLS config: no CA certificate in PEM data")
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}
	if len(certPEM) > 0 || len(keyPEM) > 0 {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("building etcd TLS config: client key pair: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// TLSConfigFromSecret builds a client TLS configuration from a Secret's ca.crt and, when
// present, tls.crt and tls.key.
func TLSConfigFromSecret(secret *corev1.Secret, serverName string) (*tls.Config, error) {
	cfg, err := TLSConfig(secret.Data["ca.crt"], secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey], serverName)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return cfg, nil
}
