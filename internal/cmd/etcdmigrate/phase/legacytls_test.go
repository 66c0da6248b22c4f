package phase

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// TestLegacyTLSVerifiesThroughAPortForward dials a real TLS listener that serves the legacy
// server certificate, as the members do, at 127.0.0.1 (where a port-forward listens) with the
// configuration LegacyTarget builds, through the real etcd client: the handshake must succeed,
// although the certificate names the legacy Services and not the dialled address. gRPC replaces
// tls.Config.ServerName with that address, so a configuration that relied on ServerName was
// refused by its own client ("bad certificate"), as the e2e on the local cluster found.
func TestLegacyTLSVerifiesThroughAPortForward(t *testing.T) {
	set, err := legacyfixture.Build(legacyfixture.Options{Name: "etcd", Namespace: "tenant-a", Variant: legacyfixture.PeerAutoTLS})
	if err != nil {
		t.Fatal(err)
	}
	var server tls.Certificate
	for _, s := range set.Secrets {
		if s.Name == set.Cluster.Spec.Security.TLS.ServerSecret {
			if server, err = tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]); err != nil {
				t.Fatal(err)
			}
		}
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{server}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	handshake := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			handshake <- err
			return
		}
		defer func() { _ = conn.Close() }()
		handshake <- conn.(*tls.Conn).HandshakeContext(context.Background())
	}()

	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(set.CAs[legacyfixture.CAServer]) {
		t.Fatal("no server CA")
	}
	target := Target{Namespace: "tenant-a", Cluster: "etcd", Scheme: "https", TLS: legacyTLSConfig(set.Cluster, pool), TLSDigest: "test"}
	conn, err := Connect(t.Context(), target, map[string]string{"etcd-0": "https://" + ln.Addr().(*net.TCPAddr).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	go func() { _, _ = conn.MemberList(ctx) }() // only to make the client dial; no etcd answers
	select {
	case err := <-handshake:
		if err != nil {
			t.Fatalf("the member's side of the TLS handshake: %v (the client refused the legacy certificate)", err)
		}
	case <-ctx.Done():
		t.Fatal("the client never completed a TLS handshake")
	}
}
