package etcdaccess

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/tlsverify"
)

// ErrMaterial means a Secret the operator needs lacks a key or holds unusable data. Its
// message names the Secret, the key and the fix, and never quotes the data.
var ErrMaterial = errors.New("unusable Secret")

// ErrSecretMissing means a Secret the operator needs does not exist.
var ErrSecretMissing = errors.New("secret does not exist")

// MaterialError is an ErrMaterial or ErrSecretMissing naming the Secret and key.
type MaterialError struct {
	kind         error
	Secret, Key  string
	Problem, Fix string
	// Credentials says the Secret is root's credentials Secret rather than a TLS one.
	Credentials bool
}

func (e *MaterialError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("Secret %s %s: %s", e.Secret, e.Problem, e.Fix)
	}
	return fmt.Sprintf("Secret %s key %s %s: %s", e.Secret, e.Key, e.Problem, e.Fix)
}

func (e *MaterialError) Unwrap() error { return e.kind }

// Config is how the operator reaches c's etcd at endpoints (client URLs by Pod IP): with TLS
// when the client API serves it, verifying serverName (a member's DNS name, which the servers'
// wildcard SAN covers, since the endpoints are IP addresses), and as root once
// status.authEnabled is latched. Secrets are read through r, uncached and by name.
func Config(ctx context.Context, r client.Reader, c *etcdv1alpha2.EtcdCluster, endpoints []string, serverName string) (etcdclient.Config, error) {
	cfg := etcdclient.Config{Endpoints: endpoints}
	if ClientTLS(c) {
		t, digest, err := clientTLS(ctx, r, c, serverName)
		if err != nil {
			return cfg, err
		}
		cfg.TLS, cfg.TLSDigest = t, digest
	}
	if c.Status.AuthEnabled && PasswordSecretName(c) != "" {
		password, err := Password(ctx, r, c)
		if err != nil {
			return cfg, err
		}
		cfg.Username, cfg.Password = RootUser, password
	}
	return cfg, nil
}

// Password reads root's password from the credentials Secret.
func Password(ctx context.Context, r client.Reader, c *etcdv1alpha2.EtcdCluster) (string, error) {
	name := PasswordSecretName(c)
	s, err := read(ctx, r, c.Namespace, name)
	if me := (*MaterialError)(nil); errors.As(err, &me) {
		me.Credentials = true
	}
	if err != nil {
		return "", err
	}
	p := s.Data[PasswordKey]
	if len(p) == 0 {
		return "", &MaterialError{kind: ErrMaterial, Credentials: true, Secret: name, Key: PasswordKey, Problem: "is missing or empty",
			Fix: "put root's password under the key password (kubectl create secret generic " + name + " --type=kubernetes.io/basic-auth --from-literal=username=root --from-literal=password=...)"}
	}
	return string(p), nil
}

// clientTLS builds the operator's TLS configuration for c's client API: the server Secret's
// ca.crt as root CAs and, under mutual TLS, the operator's client certificate.
func clientTLS(ctx context.Context, r client.Reader, c *etcdv1alpha2.EtcdCluster, serverName string) (*tls.Config, string, error) {
	serverSecret := ServerSecretName(c)
	s, err := read(ctx, r, c.Namespace, serverSecret)
	if err != nil {
		return nil, "", err
	}
	ca := s.Data[CAKey]
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, "", &MaterialError{kind: ErrMaterial, Secret: serverSecret, Key: CAKey, Problem: "holds no PEM certificate",
			Fix: "put the PEM bundle of the CA that signed the server certificate under ca.crt"}
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	tlsverify.As(t, serverName)
	var cert, key []byte
	if name := OperatorClientSecretName(c); name != "" {
		cs, err := read(ctx, r, c.Namespace, name)
		if err != nil {
			return nil, "", err
		}
		cert, key = cs.Data[CertKey], cs.Data[KeyKey]
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			// The parse error may quote key material; say only what is wrong.
			return nil, "", &MaterialError{kind: ErrMaterial, Secret: name, Key: CertKey + ", " + KeyKey, Problem: "do not form a certificate and key pair",
				Fix: "put the operator's PEM client certificate under tls.crt and its private key under tls.key"}
		}
		t.Certificates = []tls.Certificate{pair}
	}
	return t, etcdclient.DigestTLSMaterial(ca, cert, key), nil
}

// read gets a Secret by name.
func read(ctx context.Context, r client.Reader, namespace, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, s)
	switch {
	case apierrors.IsNotFound(err):
		return nil, &MaterialError{kind: ErrSecretMissing, Secret: name, Problem: "does not exist", Fix: "create it in namespace " + namespace}
	case err != nil:
		return nil, fmt.Errorf("reading Secret %s: %w", name, err)
	}
	return s, nil
}
