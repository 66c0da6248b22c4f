package etcdaccess

import etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"

// Keys of the Secrets the operator reads.
const (
	// CertKey, KeyKey and CAKey are the keys of a kubernetes.io/tls Secret, plus the CA bundle
	// that cert-manager and the operator also write.
	CertKey = "tls.crt"
	KeyKey  = "tls.key"
	CAKey   = "ca.crt"
	// PasswordKey is the key of root's password in the credentials Secret.
	PasswordKey = "password"
	// RootUser is the one etcd user the operator manages and authenticates as.
	RootUser = "root"
)

// ClientTLS reports whether c's client API (2379) serves TLS: from spec.tls.client, or from the
// operator's own certificates (spec.tls.managed).
func ClientTLS(c *etcdv1alpha2.EtcdCluster) bool {
	return c.Spec.TLS != nil && (c.Spec.TLS.Client != nil || c.Spec.TLS.Managed != nil)
}

// ServerSecretName is the Secret holding the client API's server certificate and the CA bundle
// the operator verifies members with; "" when the client API is plaintext.
func ServerSecretName(c *etcdv1alpha2.EtcdCluster) string {
	if !ClientTLS(c) {
		return ""
	}
	if ct := c.Spec.TLS.Client; ct != nil && ct.ServerSecretRef != nil {
		return ct.ServerSecretRef.Name
	}
	return c.Name + "-server-tls"
}

// OperatorClientSecretName is the Secret holding the operator's client certificate under mutual
// TLS; "" without it. It is never mounted into a member.
func OperatorClientSecretName(c *etcdv1alpha2.EtcdCluster) string {
	if !ClientTLS(c) {
		return ""
	}
	ct := c.Spec.TLS.Client
	switch {
	case ct == nil:
		// spec.tls.managed: always mutual TLS, under cert-manager mode's Secret name.
		return c.Name + "-operator-client-tls"
	case ct.OperatorClientSecretRef != nil:
		return ct.OperatorClientSecretRef.Name
	case ct.CertManager != nil && ct.CertManager.OperatorClientIssuerRef != nil:
		return c.Name + "-operator-client-tls"
	}
	return ""
}

// PasswordSecretName is the Secret holding root's password; "" when auth is not asked for.
func PasswordSecretName(c *etcdv1alpha2.EtcdCluster) string {
	if a := c.Spec.Auth; a != nil && a.Enabled && a.RootCredentialsSecretRef != nil {
		return a.RootCredentialsSecretRef.Name
	}
	return ""
}
