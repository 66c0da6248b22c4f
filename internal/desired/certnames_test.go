package desired

import (
	"crypto/x509"
	"testing"
)

// TestServerCertificateNamesCoverEveryMember checks the wildcard covers any member's DNS name,
// with and without the cluster domain, and the Services, as x509 verification sees them.
func TestServerCertificateNamesCoverEveryMember(t *testing.T) {
	n := ServerCertificateNames("etcd", "prod", "cluster.local")
	cert := &x509.Certificate{DNSNames: n.DNSNames, IPAddresses: n.IPAddresses}
	for _, host := range []string{
		MemberHost("etcd-x7k2p", "etcd", "prod"), "etcd-x7k2p.etcd.prod.svc.cluster.local",
		"etcd-client.prod.svc", "etcd.prod.svc.cluster.local", "localhost", "127.0.0.1",
	} {
		if err := cert.VerifyHostname(host); err != nil {
			t.Errorf("server certificate does not cover %s: %v", host, err)
		}
	}
	if err := cert.VerifyHostname("etcd-x7k2p.other.prod.svc"); err == nil {
		t.Error("server certificate covers a member of another cluster")
	}
}

func TestPeerCertificateNamesCoverMembersOnly(t *testing.T) {
	n := PeerCertificateNames("etcd", "prod", "cluster.local")
	cert := &x509.Certificate{DNSNames: n.DNSNames}
	if err := cert.VerifyHostname(MemberHost("etcd-abcde", "etcd", "prod")); err != nil {
		t.Errorf("peer certificate does not cover a member: %v", err)
	}
	if err := cert.VerifyHostname("etcd-client.prod.svc"); err == nil {
		t.Error("peer certificate covers the client Service")
	}
}
