package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// identity is a client certificate subject: CN is the Kubernetes user name, O its groups.
type identity struct {
	file string
	cn   string
	orgs []string
}

// Client identities. Components get the users Kubernetes' bootstrap RBAC expects; the admin
// and the apiserver's kubelet client are cluster admins, as in kubeadm.
var (
	adminIdentity         = identity{file: "admin", cn: "etcd-operator-admin", orgs: []string{"system:masters"}}
	kubeletClientIdentity = identity{file: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}}
	controllerMgrIdentity = identity{file: "controller-manager", cn: "system:kube-controller-manager"}
	schedulerIdentity     = identity{file: "scheduler", cn: "system:kube-scheduler"}
	kubeProxyIdentity     = identity{file: "kube-proxy", cn: "system:kube-proxy"}
	coreDNSIdentity       = identity{file: "coredns", cn: coreDNSUser}
)

func nodeIdentity(n Node) identity {
	return identity{file: n.Name, cn: "system:node:" + n.Name, orgs: []string{"system:nodes"}}
}

// certAuthority signs the cluster's certificates.
type certAuthority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// pkiValidity outlives any test run; the PKI is recreated with the cluster.
const pkiValidity = 365 * 24 * time.Hour

// ensurePKI creates the CA, serving and client certificates, the service-account key and
// every kubeconfig, unless a previous up completed them (marker written last).
func (c *Cluster) ensurePKI() error {
	l := c.layout
	marker := filepath.Join(l.pki(), "complete")
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	if err := os.MkdirAll(l.pki(), 0o700); err != nil {
		return err
	}
	ca, err := newCA()
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(l.pki(), "ca.crt"), "CERTIFICATE", ca.cert.Raw); err != nil {
		return err
	}
	if err := writeKey(filepath.Join(l.pki(), "ca.key"), ca.key); err != nil {
		return err
	}
	server := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP(ControlPlaneIP), net.ParseIP(KubernetesServiceIP), net.ParseIP("127.0.0.1")},
		DNSNames: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc." + DNSDomain, "localhost"},
	}
	if err := ca.issue(l.pki(), "apiserver", server); err != nil {
		return err
	}
	ids := []identity{adminIdentity, kubeletClientIdentity, controllerMgrIdentity, schedulerIdentity,
		kubeProxyIdentity, coreDNSIdentity}
	for _, n := range c.nodes {
		ids = append(ids, nodeIdentity(n))
	}
	for _, id := range ids {
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: id.cn, Organization: id.orgs},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if err := ca.issue(l.pki(), id.file, tmpl); err != nil {
			return err
		}
		if err := c.writeKubeconfig(id); err != nil {
			return err
		}
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(l.pki(), "sa.key"), saKey); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(l.pki(), "sa.pub"), "PUBLIC KEY", pub); err != nil {
		return err
	}
	return os.WriteFile(marker, nil, 0o600)
}

func newCA() (*certAuthority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "etcd-operator-local-cluster-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(pkiValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("creating CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &certAuthority{cert: cert, key: key}, nil
}

// issue signs tmpl and writes <name>.crt and <name>.key into dir.
func (ca *certAuthority) issue(dir, name string, tmpl *x509.Certificate) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(pkiValidity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return fmt.Errorf("signing %s: %w", name, err)
	}
	if err := writePEM(filepath.Join(dir, name+".crt"), "CERTIFICATE", der); err != nil {
		return err
	}
	return writeKey(filepath.Join(dir, name+".key"), key)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// kubeconfigPath is where the kubeconfig of id lives; the admin's is the one users get.
func (c *Cluster) kubeconfigPath(id identity) string {
	if id.file == adminIdentity.file {
		return c.layout.kubeconfig()
	}
	return c.layout.config(id.file + ".kubeconfig")
}

// writeKubeconfig writes a kubeconfig for id with its certificates embedded. The server is an
// IP address: nothing on the host resolves cluster names.
func (c *Cluster) writeKubeconfig(id identity) error {
	read := func(name string) (string, error) {
		data, err := os.ReadFile(filepath.Join(c.layout.pki(), name))
		return base64.StdEncoding.EncodeToString(data), err
	}
	ca, err := read("ca.crt")
	if err != nil {
		return err
	}
	crt, err := read(id.file + ".crt")
	if err != nil {
		return err
	}
	key, err := read(id.file + ".key")
	if err != nil {
		return err
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: etcd-operator-local
  cluster:
    server: https://%s:%d
    certificate-authority-data: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: etcd-operator-local
  context:
    cluster: etcd-operator-local
    user: %s
current-context: etcd-operator-local
`, ControlPlaneIP, APIServerPort, ca, id.cn, crt, key, id.cn)
	path := c.kubeconfigPath(id)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(cfg), 0o600)
}
