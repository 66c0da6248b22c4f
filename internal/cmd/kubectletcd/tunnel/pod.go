package tunnel

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/podconn"
	"github.com/etcd-operator/etcd-operator/internal/etcdaccess"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/portforward"
	"github.com/etcd-operator/etcd-operator/internal/tlsverify"
)

// PodTLS names the Secrets pod mode may need beyond what the Pod mounts (docs/kubectl-etcd.md,
// "Compatibility mode (--pod)"), each as [namespace/]name.
type PodTLS struct {
	// CASecret's ca.crt verifies the server when the Secret behind --cert-file has none.
	CASecret string
	// ClientCertSecret's tls.crt and tls.key are the client identity under --client-cert-auth.
	ClientCertSecret string
}

// DialPod forwards one local port to the etcd client port of pod and connects over it, with the
// connection podconn derives from the Pod.
func (d *Dialer) DialPod(ctx context.Context, pod *corev1.Pod) (*invocation.EtcdSession, error) {
	if pod.Status.Phase != corev1.PodRunning {
		return nil, fmt.Errorf("pod %s/%s is %s, not Running: no port-forward reaches it", pod.Namespace, pod.Name, pod.Status.Phase)
	}
	t, err := podconn.Derive(pod)
	if err != nil {
		return nil, err
	}
	cfg, err := PodConfig(ctx, d.Reader, t, d.PodTLS, d.CredentialsSecret)
	if err != nil {
		return nil, err
	}
	f, err := portforward.Open(ctx, d.REST, pod.Namespace, pod.Name, int(t.Port))
	if err != nil {
		return nil, fmt.Errorf("port-forward to Pod %s: %w", pod.Name, err)
	}
	ep := (&url.URL{Scheme: t.Scheme, Host: "127.0.0.1:" + strconv.Itoa(f.LocalPort())}).String()
	cfg.Endpoints = []string{ep}
	conn, err := etcdclient.New(ctx, cfg)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &invocation.EtcdSession{Etcd: &closing{Conn: conn, stop: f.Close}, Endpoints: map[string]string{pod.Name: ep}}, nil
}

// PodConfig is the etcd client configuration for target t, without endpoints: the server CA
// from --ca-secret or the ca.crt of the Secret behind --cert-file, the name verified
// t.ServerName, the client identity from --client-cert-secret, and basic auth from
// credentials ([namespace/]name). Secrets are read by name through r; errors name the Secret and
// key, never their data.
func PodConfig(ctx context.Context, r client.Reader, t podconn.Target, o PodTLS, credentials string) (etcdclient.Config, error) {
	var cfg etcdclient.Config
	if credentials != "" {
		var err error
		if cfg.Username, cfg.Password, err = basicAuth(ctx, r, t.Namespace, credentials); err != nil {
			return cfg, err
		}
	}
	if !t.TLS() {
		return cfg, nil
	}
	ca, err := serverCA(ctx, r, t, o.CASecret)
	if err != nil {
		return cfg, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return cfg, invocation.Usagef("the server CA found for Pod %s holds no PEM certificate under %s", t.Pod, podconn.CAKey)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	tlsverify.As(tc, t.ServerName)
	var cert, key []byte
	switch {
	case o.ClientCertSecret != "":
		if cert, key, err = clientPair(ctx, r, t.Namespace, o.ClientCertSecret); err != nil {
			return cfg, err
		}
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			// The parse error may quote key material; say only what is wrong.
			return cfg, invocation.Usagef("--client-cert-secret %s: tls.crt and tls.key do not form a PEM certificate and key pair", o.ClientCertSecret)
		}
		tc.Certificates = []tls.Certificate{pair}
	case t.ClientCertAuth:
		return cfg, invocation.Usagef("pod %s runs etcd with --client-cert-auth%s, so it wants a client certificate: give --client-cert-secret [namespace/]name, "+
			"a kubernetes.io/tls Secret whose certificate that CA signed (for this operator's clusters the operator-client Secret, e.g. <cluster>-operator-client-tls; "+
			"for a legacy cluster its spec.security.tls.clientSecret)", t.Pod, caNote(t.ClientCA))
	}
	cfg.TLS, cfg.TLSDigest = tc, etcdclient.DigestTLSMaterial(ca, cert, key)
	return cfg, nil
}

func caNote(f *podconn.SecretFile) string {
	if f == nil {
		return ""
	}
	return fmt.Sprintf(" (trusted CA from Secret %s key %s)", f.Secret, f.Key)
}

// serverCA is the CA bundle the server is verified with: --ca-secret's ca.crt when given, else
// the ca.crt of the Secret behind --cert-file.
func serverCA(ctx context.Context, r client.Reader, t podconn.Target, caSecret string) ([]byte, error) {
	if caSecret != "" {
		s, err := secret(ctx, r, t.Namespace, caSecret, "--ca-secret")
		if err != nil {
			return nil, err
		}
		if len(s.Data[podconn.CAKey]) == 0 {
			return nil, invocation.Usagef("--ca-secret %s has no %s key", caSecret, podconn.CAKey)
		}
		return s.Data[podconn.CAKey], nil
	}
	fix := "give --ca-secret [namespace/]name, a Secret whose ca.crt is the CA that signed the server certificate (for a legacy cluster, its spec.security.tls.serverTrustedCASecret)"
	if t.ServerCert == nil {
		return nil, invocation.Usagef("pod %s serves TLS from a certificate that is not mounted from a Secret, so no CA is known to verify it: %s", t.Pod, fix)
	}
	s, err := secret(ctx, r, t.Namespace, t.ServerCert.Secret, "the server certificate Secret")
	if err != nil {
		return nil, err
	}
	if len(s.Data[podconn.CAKey]) == 0 {
		return nil, invocation.Usagef("pod %s serves TLS from Secret %s, which has no %s to verify it with: %s", t.Pod, t.ServerCert.Secret, podconn.CAKey, fix)
	}
	return s.Data[podconn.CAKey], nil
}

func clientPair(ctx context.Context, r client.Reader, ns, ref string) ([]byte, []byte, error) {
	s, err := secret(ctx, r, ns, ref, "--client-cert-secret")
	if err != nil {
		return nil, nil, err
	}
	cert, key := s.Data[etcdaccess.CertKey], s.Data[etcdaccess.KeyKey]
	if len(cert) == 0 || len(key) == 0 {
		return nil, nil, invocation.Usagef("--client-cert-secret %s needs both %s and %s: give a kubernetes.io/tls Secret", ref, etcdaccess.CertKey, etcdaccess.KeyKey)
	}
	return cert, key, nil
}

// secret reads ref, [namespace/]name with ns as the default namespace; what says which flag or
// role named it.
func secret(ctx context.Context, r client.Reader, ns, ref, what string) (*corev1.Secret, error) {
	name := ref
	if before, after, ok := strings.Cut(ref, "/"); ok {
		ns, name = before, after
	}
	s := &corev1.Secret{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		return nil, fmt.Errorf("reading %s %s/%s: %w", what, ns, name, err)
	}
	return s, nil
}
