package pki

import (
	"crypto/x509"
	"slices"
	"strings"
	"testing"
	"time"
)

// byoExpectations are what a cluster etcd in namespace prod with BYO server, peer and operator
// client Secrets expects of them.
func byoExpectations() []Expectation {
	member := HostCheck{Host: "etcd-xxxxx.etcd.prod.svc", What: "a new member's name", SAN: "*.etcd.prod.svc"}
	return []Expectation{
		{Secret: "server", Role: "server", NeedCA: true, TrustedBy: "server", Usages: serverUsages,
			Hosts: []HostCheck{member, {Host: "etcd-client.prod.svc", What: "the client Service", SAN: "etcd-client.prod.svc"}}},
		{Secret: "peer", Role: "peer", NeedCA: true, TrustedBy: "peer", Usages: serverUsages, Hosts: []HostCheck{member}},
		{Secret: "client", Role: "operator client", TrustedBy: "server", Usages: clientUsages},
	}
}

// TestCheck judges BYO Secrets on a fixed clock: each fault is reported once, naming the
// Secret, the key and the fix, with the severity the cluster acts on.
func TestCheck(t *testing.T) {
	t.Parallel()
	ca, caPair := testCA(t, "user CA", t0.Add(-365*24*time.Hour))
	stranger, _ := testCA(t, "someone else's CA", t0)
	peerWant := Requirement{CommonName: "peer", DNSNames: []string{"*.etcd.prod.svc"}, Usages: serverUsages}
	leaf := func(want Requirement, validity time.Duration, at time.Time) KeyPair {
		return issue(t, ca, want.Request(validity), at)
	}
	good := map[string]map[string][]byte{
		"server": secretData(leaf(serverWant, LeafValidity, t0), caPair.Cert),
		"peer":   secretData(leaf(peerWant, LeafValidity, t0), caPair.Cert),
		"client": secretData(leaf(Requirement{CommonName: "root", Usages: clientUsages}, LeafValidity, t0), nil),
	}
	type want struct {
		secret, key string
		sev         Severity
		says        string
	}
	cases := []struct {
		name   string
		change func(s map[string]map[string][]byte)
		want   []want
	}{
		{"everything right", func(map[string]map[string][]byte) {}, nil},
		{"server Secret without ca.crt", func(s map[string]map[string][]byte) { delete(s["server"], CAKey) },
			[]want{{"server", CAKey, SeverityInvalid, "Secret server, key ca.crt: missing; add the PEM bundle of the CA certificates"}}},
		{"peer Secret without tls.key", func(s map[string]map[string][]byte) { delete(s["peer"], KeyKey) },
			[]want{{"peer", KeyKey, SeverityInvalid, "Secret peer, key tls.key: missing; add the peer certificate's private key in PEM"}}},
		{"unparsable certificate", func(s map[string]map[string][]byte) { s["peer"][CertKey] = []byte("not PEM") },
			[]want{{"peer", CertKey, SeverityInvalid, "Secret peer, key tls.crt: not a PEM-encoded certificate"}}},
		{"key of another certificate", func(s map[string]map[string][]byte) { s["peer"][KeyKey] = s["server"][KeyKey] },
			[]want{{"peer", KeyKey, SeverityInvalid, "not the private key of the certificate in tls.crt"}}},
		{"server certificate without the wildcard", func(s map[string]map[string][]byte) {
			w := serverWant
			w.DNSNames = []string{"etcd-aaaaa.etcd.prod.svc", "etcd-client.prod.svc"}
			s["server"] = secretData(leaf(w, LeafValidity, t0), caPair.Cert)
		}, []want{{"server", CertKey, SeverityInvalid, "the server certificate does not cover a new member's name (etcd-xxxxx.etcd.prod.svc); add the subject alternative name *.etcd.prod.svc"}}},
		{"server certificate without the client Service", func(s map[string]map[string][]byte) {
			w := serverWant
			w.DNSNames = []string{"*.etcd.prod.svc"}
			s["server"] = secretData(leaf(w, LeafValidity, t0), caPair.Cert)
		}, []want{{"server", CertKey, SeverityInvalid, "does not cover the client Service (etcd-client.prod.svc)"}}},
		{"peer certificate for servers only", func(s map[string]map[string][]byte) {
			w := peerWant
			w.Usages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
			s["peer"] = secretData(leaf(w, LeafValidity, t0), caPair.Cert)
		}, []want{{"peer", CertKey, SeverityInvalid, "the peer certificate lacks the extended key usage clientAuth; issue it with serverAuth and clientAuth"}}},
		{"operator client certificate for servers only", func(s map[string]map[string][]byte) {
			s["client"] = secretData(leaf(Requirement{CommonName: "root", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, LeafValidity, t0), nil)
		}, []want{{"client", CertKey, SeverityInvalid, "the operator client certificate lacks the extended key usage clientAuth"}}},
		{"peer certificate from another CA", func(s map[string]map[string][]byte) {
			s["peer"] = secretData(issue(t, stranger, peerWant.Request(LeafValidity), t0), caPair.Cert)
		}, []want{{"peer", CertKey, SeverityInvalid, "the peer certificate is not signed by a CA in ca.crt of Secret peer"}}},
		{"operator client certificate the server's ca.crt does not trust", func(s map[string]map[string][]byte) {
			s["client"] = secretData(issue(t, stranger, Requirement{CommonName: "root", Usages: clientUsages}.Request(LeafValidity), t0), nil)
		}, []want{{"client", CertKey, SeverityInvalid, "not signed by a CA in ca.crt of Secret server"}}},
		{"not valid yet", func(s map[string]map[string][]byte) {
			s["peer"] = secretData(leaf(peerWant, LeafValidity, t0.Add(24*time.Hour)), caPair.Cert)
		}, []want{{"peer", CertKey, SeverityInvalid, "the peer certificate is not valid before 2030-01-02T11:55:00Z"}}},
		{"expired", func(s map[string]map[string][]byte) {
			s["server"] = secretData(leaf(serverWant, 24*time.Hour, t0.Add(-48*time.Hour)), caPair.Cert)
		}, []want{{"server", CertKey, SeverityInvalid, "the server certificate expired at 2029-12-31T12:00:00Z; put a renewed certificate"}}},
		{"expires in 5 days", func(s map[string]map[string][]byte) {
			s["server"] = secretData(leaf(serverWant, 5*24*time.Hour, t0), caPair.Cert)
		}, []want{{"server", CertKey, SeverityDegraded, "the server certificate expires at 2030-01-06T12:00:00Z, in less than 7 days; renew it now"}}},
		{"expires in 20 days", func(s map[string]map[string][]byte) {
			s["client"] = secretData(leaf(Requirement{CommonName: "root", Usages: clientUsages}, 20*24*time.Hour, t0), nil)
		}, []want{{"client", CertKey, SeverityWarning, "the operator client certificate expires at 2030-01-21T12:00:00Z, in less than 30 days"}}},
		{"no extended key usage at all means any", func(s map[string]map[string][]byte) {
			s["peer"] = secretData(leaf(Requirement{CommonName: "peer", DNSNames: []string{"*.etcd.prod.svc"}}, LeafValidity, t0), caPair.Cert)
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			data := map[string]map[string][]byte{}
			for k, v := range good {
				data[k] = map[string][]byte{}
				for kk, vv := range v {
					data[k][kk] = slices.Clone(vv)
				}
			}
			c.change(data)
			secrets := map[string]*Material{}
			for k, v := range data {
				secrets[k] = parsed(v)
			}
			got := Check(byoExpectations(), secrets, t0)
			if len(got) != len(c.want) {
				t.Fatalf("%d problems, want %d: %+v", len(got), len(c.want), got)
			}
			for i, w := range c.want {
				g := got[i]
				if g.Secret != w.secret || g.Key != w.key || g.Severity != w.sev || !strings.Contains(g.Message, w.says) {
					t.Errorf("problem %d = %+v, want %s/%s severity %d saying %q", i, g, w.secret, w.key, w.sev, w.says)
				}
				if (g.Severity != SeverityInvalid) != (g.Certificate != "") {
					t.Errorf("problem %d: fingerprint %q with severity %d", i, g.Certificate, g.Severity)
				}
			}
		})
	}
}

// TestCheckSkipsWhatIsReportedElsewhere: an absent Secret is the caller's to report, and an
// operator client Secret needs no ca.crt.
func TestCheckSkipsWhatIsReportedElsewhere(t *testing.T) {
	t.Parallel()
	if got := Check(byoExpectations(), map[string]*Material{}, t0); len(got) != 0 {
		t.Errorf("absent Secrets: %+v", got)
	}
	ca, caPair := testCA(t, "ca", t0)
	client := parsed(secretData(issue(t, ca, LeafRequest{CommonName: "root", Usages: clientUsages, Validity: LeafValidity}, t0), nil))
	server := parsed(map[string][]byte{CAKey: caPair.Cert})
	got := Check(byoExpectations()[2:], map[string]*Material{"client": client, "server": server}, t0)
	if len(got) != 0 {
		t.Errorf("operator client Secret without ca.crt: %+v", got)
	}
}
