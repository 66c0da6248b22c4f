package phase

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/tlsverify"
)

const keyCA = "ca.crt"

// LegacyTarget is how to reach a legacy cluster with the legacy operator's own client identity
// (docs/migration.md, "Phases", inspect): the CA from serverTrustedCASecret, else the server
// Secret's ca.crt; the client certificate from clientSecret; the server name of the legacy
// client Service, which the legacy server certificates name.
func LegacyTarget(ctx context.Context, r client.Reader, c *legacy.EtcdCluster, pods []corev1.Pod) (Target, error) {
	t := Target{Namespace: c.Namespace, Cluster: c.Name, Pods: pods, Scheme: "http"}
	spec := c.TLS()
	if spec.ServerSecret == "" {
		return t, nil
	}
	t.Scheme = "https"
	caSecret := spec.ServerTrustedCASecret
	if caSecret == "" {
		caSecret = spec.ServerSecret
	}
	ca, err := secretData(ctx, r, c.Namespace, caSecret)
	if err != nil {
		return t, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca[keyCA]) {
		return t, fmt.Errorf("the legacy Secret %s has no PEM %s to verify the members with", caSecret, keyCA)
	}
	cfg := legacyTLSConfig(c, pool)
	parts := [][]byte{ca[keyCA]}
	if spec.ClientSecret != "" {
		cert, err := secretData(ctx, r, c.Namespace, spec.ClientSecret)
		if err != nil {
			return t, err
		}
		pair, err := tls.X509KeyPair(cert[corev1.TLSCertKey], cert[corev1.TLSPrivateKeyKey])
		if err != nil {
			return t, fmt.Errorf("the legacy client Secret %s: %w", spec.ClientSecret, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
		parts = append(parts, cert[corev1.TLSCertKey], cert[corev1.TLSPrivateKeyKey])
	}
	t.TLS, t.TLSDigest = cfg, etcdclient.DigestTLSMaterial(parts...)
	return t, nil
}

// legacyTLSConfig verifies the members against pool and the legacy client Service's name. The
// name is checked by tlsverify.As, not through ServerName alone: gRPC replaces ServerName with
// the dialled authority, here a port-forward's 127.0.0.1:port, which no legacy certificate
// names (docs/tls.md, "How the operator connects"); found by the e2e on the local cluster.
func legacyTLSConfig(c *legacy.EtcdCluster, pool *x509.CertPool) *tls.Config {
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	tlsverify.As(cfg, legacy.ClientServiceName(c)+"."+c.Namespace+".svc")
	return cfg
}

func secretData(ctx context.Context, r client.Reader, ns, name string) (map[string][]byte, error) {
	s := &corev1.Secret{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", ns, name, err)
	}
	return s.Data, nil
}
