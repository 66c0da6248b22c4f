package tunnel_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/podconn"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/tunnel"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// legacy is legacy cluster "old" of variant v: its Pod old-1's target, a client reading its
// Secrets, and the Set.
func legacy(t *testing.T, o legacyfixture.Options) (podconn.Target, client.Reader, *legacyfixture.Set) {
	t.Helper()
	o.Name, o.Namespace, o.Formed = "old", "tenant", true
	s, err := legacyfixture.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	target, err := podconn.Derive(s.ExpectedPods()[1])
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme)
	for _, sec := range s.Secrets {
		b = b.WithObjects(sec)
	}
	return target, b.Build(), s
}

// verifies reports whether cfg accepts the legacy server certificate of set.
func verifies(t *testing.T, cfg *tls.Config, set *legacyfixture.Set) bool {
	t.Helper()
	var certPEM []byte
	for _, s := range set.Secrets {
		if s.Name == "old-server-tls" {
			certPEM = s.Data[corev1.TLSCertKey]
		}
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.VerifyConnection(tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}) == nil
}

func TestPodConfigPlaintextReadsNoSecret(t *testing.T) {
	target, r, _ := legacy(t, legacyfixture.Options{})
	cfg, err := tunnel.PodConfig(context.Background(), r, target, tunnel.PodTLS{}, "")
	if err != nil || cfg.TLS != nil || cfg.Username != "" {
		t.Fatalf("plaintext: TLS %v, user %q, err %v", cfg.TLS, cfg.Username, err)
	}
}

func TestPodConfigLegacyTLS(t *testing.T) {
	ctx := context.Background()
	target, r, set := legacy(t, legacyfixture.Options{Variant: legacyfixture.TLS})
	secretData := func(err error) {
		t.Helper()
		for _, s := range set.Secrets {
			for _, v := range s.Data {
				if strings.Contains(err.Error(), strings.TrimSpace(string(v))) {
					t.Errorf("the error quotes Secret %s: %v", s.Name, err)
				}
			}
		}
	}

	// The server Secret has no ca.crt (the legacy six-Secret layout): --ca-secret is named.
	_, err := tunnel.PodConfig(ctx, r, target, tunnel.PodTLS{}, "")
	if invocation.Code(err) != invocation.ExitUsage || !strings.Contains(err.Error(), "--ca-secret") || !strings.Contains(err.Error(), "old-server-tls") {
		t.Fatalf("no CA: want a usage error naming --ca-secret and old-server-tls, got %v", err)
	}
	secretData(err)

	// With the CA, --client-cert-auth asks for a client identity.
	_, err = tunnel.PodConfig(ctx, r, target, tunnel.PodTLS{CASecret: "old-server-ca"}, "")
	if invocation.Code(err) != invocation.ExitUsage || !strings.Contains(err.Error(), "--client-cert-secret") || !strings.Contains(err.Error(), "old-client-ca") {
		t.Fatalf("no client identity: want a usage error naming --client-cert-secret and the client CA Secret, got %v", err)
	}
	secretData(err)

	// The client CA is not the server's: verification must fail with it.
	cfg, err := tunnel.PodConfig(ctx, r, target, tunnel.PodTLS{CASecret: "tenant/old-client-ca", ClientCertSecret: "old-client-tls"}, "") //nolint:gosec // G101: Secret names, not their content
	if err != nil {
		t.Fatal(err)
	}
	if verifies(t, cfg.TLS, set) {
		t.Error("the server certificate verified against the client CA")
	}

	cfg, err = tunnel.PodConfig(ctx, r, target, tunnel.PodTLS{CASecret: "old-server-ca", ClientCertSecret: "old-client-tls"}, "") //nolint:gosec // G101: Secret names, not their content
	if err != nil {
		t.Fatal(err)
	}
	if !verifies(t, cfg.TLS, set) || len(cfg.TLS.Certificates) != 1 || cfg.TLS.ServerName != "old-1.old-headless.tenant.svc" || cfg.TLSDigest == "" {
		t.Errorf("TLS: verifies %t, %d client certificates, server name %q, digest %q", verifies(t, cfg.TLS, set), len(cfg.TLS.Certificates), cfg.TLS.ServerName, cfg.TLSDigest)
	}

	// A Secret that is not a key pair is refused without quoting it.
	_, err = tunnel.PodConfig(ctx, r, target, tunnel.PodTLS{CASecret: "old-server-ca", ClientCertSecret: "old-server-ca"}, "")
	if invocation.Code(err) != invocation.ExitUsage {
		t.Fatalf("a CA Secret as client identity: want a usage error, got %v", err)
	}
	secretData(err)
}

// With ca.crt in the certificate Secrets (cert-manager's layout), the Pod alone says how to
// verify the server.
func TestPodConfigCAFromTheServerSecret(t *testing.T) {
	target, r, set := legacy(t, legacyfixture.Options{Variant: legacyfixture.PeerAutoTLS, CAInCertSecrets: true})
	cfg, err := tunnel.PodConfig(context.Background(), r, target, tunnel.PodTLS{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !verifies(t, cfg.TLS, set) || len(cfg.TLS.Certificates) != 0 {
		t.Errorf("verifies %t with %d client certificates, want true with none", verifies(t, cfg.TLS, set), len(cfg.TLS.Certificates))
	}
}
