package pki

import (
	"crypto/x509"
	"net"
	"testing"
	"time"
)

// TestDecideRenewal is the renewal rule on a fixed clock: a leaf is due at two thirds of its
// lifetime, or at once when another CA signed it or it says other names or usages than required.
func TestDecideRenewal(t *testing.T) {
	t.Parallel()
	ca, _ := testCA(t, "current", t0)
	other, _ := testCA(t, "previous", t0)
	leaf := func(signer *CA, req LeafRequest) *x509.Certificate {
		certs, err := ParseCertificates(issue(t, signer, req, t0).Cert)
		if err != nil {
			t.Fatal(err)
		}
		return certs[0]
	}
	fresh := leaf(ca, serverWant.Request(LeafValidity))
	// The validity starts at t0 - backdate, so two thirds in is 60 days less 5 minutes, plus a
	// third of the backdate.
	dueAt := t0.Add(-backdate).Add((LeafValidity + backdate) / 3 * 2)
	fewerNames := serverWant
	fewerNames.DNSNames = fewerNames.DNSNames[:2]
	otherIP := serverWant
	otherIP.IPAddresses = []net.IP{net.IPv4(10, 0, 0, 1)}
	clientOnly := serverWant
	clientOnly.Usages = clientUsages
	renamed := serverWant
	renamed.CommonName = "other"
	reordered := serverWant
	reordered.DNSNames = []string{"localhost", "etcd-client.prod.svc", "*.etcd.prod.svc.cluster.local", "*.etcd.prod.svc"}
	reordered.Usages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}

	cases := []struct {
		name   string
		leaf   *x509.Certificate
		want   Requirement
		now    time.Time
		due    bool
		reason string
		at     time.Time
	}{
		{"fresh", fresh, serverWant, t0, false, "", dueAt},
		{"a day before two thirds", fresh, serverWant, dueAt.Add(-24 * time.Hour), false, "", dueAt},
		{"at two thirds", fresh, serverWant, dueAt, true, "it is two thirds into its lifetime", time.Time{}},
		{"expired", fresh, serverWant, fresh.NotAfter.Add(time.Hour), true, "it is two thirds into its lifetime", time.Time{}},
		{"same names and usages in another order", fresh, reordered, t0, false, "", dueAt},
		{"signed by another CA", leaf(other, serverWant.Request(LeafValidity)), serverWant, t0, true, "it is not signed by the current CA", time.Time{}},
		{"a DNS name no longer required", fresh, fewerNames, t0, true, "its subject alternative names differ from the required ones", time.Time{}},
		{"another IP address", fresh, otherIP, t0, true, "its subject alternative names differ from the required ones", time.Time{}},
		{"other usages", fresh, clientOnly, t0, true, "its extended key usages differ from the required ones", time.Time{}},
		{"other common name", fresh, renamed, t0, true, "its common name differs from the required other", time.Time{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := DecideRenewal(c.leaf, ca.Cert, c.want, c.now)
			if got.Due != c.due || got.Reason != c.reason || !got.At.Equal(c.at) {
				t.Errorf("DecideRenewal = %+v, want due=%v %q at %s", got, c.due, c.reason, c.at)
			}
		})
	}
}

// TestTrustBundle: one or two CAs, duplicates dropped, the same bytes whatever the order given.
func TestTrustBundle(t *testing.T) {
	t.Parallel()
	older, _ := testCA(t, "older", t0)
	newer, _ := testCA(t, "newer", t0.Add(time.Hour))
	one := TrustBundle(older.Cert, older.Cert)
	if certs, err := ParseCertificates(one); err != nil || len(certs) != 1 {
		t.Fatalf("a duplicated CA: %d certificates, %v", len(certs), err)
	}
	ab, ba := TrustBundle(older.Cert, newer.Cert), TrustBundle(newer.Cert, older.Cert, newer.Cert)
	if string(ab) != string(ba) {
		t.Error("the bundle depends on the order of its CAs")
	}
	certs, err := ParseCertificates(ab)
	if err != nil || len(certs) != 2 || certs[0].Subject.CommonName != "older" {
		t.Fatalf("bundle of two: %v, %v", certs, err)
	}
	if len(TrustBundle()) != 0 || len(TrustBundle(nil)) != 0 {
		t.Error("an empty bundle has bytes")
	}
}
