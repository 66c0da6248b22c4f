package desired

import "net"

// CertificateNames are the subject alternative names a certificate needs (docs/tls.md,
// "Names in the certificates").
type CertificateNames struct {
	// DNSNames are the DNS SANs, wildcards included.
	DNSNames []string
	// IPAddresses are the IP SANs.
	IPAddresses []net.IP
}

// ServerCertificateNames are the SANs of the client API (2379) certificate: every member by
// wildcard, so a replacement member under a new name needs no new certificate; the headless
// and client Services, so clients may dial the cluster as a whole; and localhost, so that a
// process in the member's own Pod (etcd's gateway, the guard) can dial it. Each Service name
// appears with and without the cluster domain, because both forms resolve in the cluster.
func ServerCertificateNames(cluster, namespace, domain string) CertificateNames {
	headless := HeadlessServiceName(cluster) + "." + namespace + ".svc"
	client := ClientServiceName(cluster) + "." + namespace + ".svc"
	return CertificateNames{
		DNSNames: []string{
			"*." + headless, "*." + headless + "." + domain,
			headless, headless + "." + domain,
			client, client + "." + domain,
			"localhost",
		},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
}

// PeerCertificateNames are the SANs of the peer API (2380) certificate: every member by
// wildcard, nothing else, since only members dial peers.
func PeerCertificateNames(cluster, namespace, domain string) CertificateNames {
	headless := HeadlessServiceName(cluster) + "." + namespace + ".svc"
	return CertificateNames{DNSNames: []string{"*." + headless, "*." + headless + "." + domain}}
}

// OperatorClientCommonName is the common name of the operator's client certificate in the
// certificates the operator or cert-manager issues. etcd maps a client certificate's common
// name to a user when auth is on; the operator acts as root either way.
const OperatorClientCommonName = "root"
