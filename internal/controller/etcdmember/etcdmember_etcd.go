package etcdmember

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// Secret keys the etcd client reads.
const (
	secretCertKey     = "tls.crt"
	secretKeyKey      = "tls.key"
	secretPasswordKey = "password"
	rootUser          = "root"
)

// errTLSMaterial means a TLS Secret lacks what the client needs.
var errTLSMaterial = errors.New("TLS Secret is incomplete")

// etcdConfig says how to reach the member's cluster: the client URLs of its member Pods by IP
// (no DNS lookups from the operator), with the operator's TLS identity and root credentials
// when the cluster uses them.
func (r *Reconciler) etcdConfig(ctx context.Context, sc *scope) (etcdclient.Config, error) {
	parent, m := sc.parent, sc.member
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(m.Namespace),
		client.MatchingLabels{etcdv1alpha2.LabelCluster: parent.Name}); err != nil {
		return etcdclient.Config{}, fmt.Errorf("listing the cluster's Pods: %w", err)
	}
	clientTLS := parent.Spec.TLS != nil && (parent.Spec.TLS.Client != nil || parent.Spec.TLS.Managed != nil)
	cfg := etcdclient.Config{Endpoints: podEndpoints(pods.Items, clientTLS)}
	if len(cfg.Endpoints) == 0 {
		return cfg, errNoEndpoints
	}
	if clientTLS {
		t, digest, err := r.clientTLS(ctx, parent, m)
		if err != nil {
			return cfg, err
		}
		cfg.TLS, cfg.TLSDigest = t, digest
	}
	if parent.Status.AuthEnabled && parent.Spec.Auth != nil && parent.Spec.Auth.RootCredentialsSecretRef != nil {
		s, err := r.secret(ctx, m.Namespace, parent.Spec.Auth.RootCredentialsSecretRef.Name)
		if err != nil {
			return cfg, err
		}
		cfg.Username, cfg.Password = rootUser, string(s.Data[secretPasswordKey])
	}
	return cfg, nil
}

// podEndpoints are the client URLs of the member Pods that have an IP, sorted. Only Pods
// controlled by an EtcdMember count: the cluster label alone could be copied onto anything.
func podEndpoints(pods []corev1.Pod, tlsOn bool) []string {
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	var eps []string
	for i := range pods {
		p := &pods[i]
		ref := metav1.GetControllerOf(p)
		if p.Status.PodIP == "" || !p.DeletionTimestamp.IsZero() || ref == nil || ref.Kind != "EtcdMember" {
			continue
		}
		eps = append(eps, scheme+"://"+net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(desired.ClientPort))))
	}
	slices.Sort(eps)
	return slices.Compact(eps)
}

// clientTLS builds the operator's TLS configuration for the cluster's client API: the server
// Secret's ca.crt as root CAs, the operator client certificate under mutual TLS, and a server
// name that the servers' wildcard SAN *.<service>.<namespace>.svc covers, since the endpoints
// are IP addresses.
func (r *Reconciler) clientTLS(ctx context.Context, parent *etcdv1alpha2.EtcdCluster, m *etcdv1alpha2.EtcdMember) (*tls.Config, string, error) {
	ct := parent.Spec.TLS.Client
	if ct == nil {
		// spec.tls.managed: the operator's own Secrets, under their cert-manager names.
		ct = &etcdv1alpha2.ClientTLS{}
	}
	serverSecret := parent.Name + "-server-tls"
	if ct.ServerSecretRef != nil {
		serverSecret = ct.ServerSecretRef.Name
	}
	clientSecret := ""
	switch {
	case ct.OperatorClientSecretRef != nil:
		clientSecret = ct.OperatorClientSecretRef.Name
	case ct.CertManager != nil && ct.CertManager.OperatorClientIssuerRef != nil, parent.Spec.TLS.Managed != nil:
		clientSecret = parent.Name + "-operator-client-tls"
	}

	s, err := r.secret(ctx, m.Namespace, serverSecret)
	if err != nil {
		return nil, "", err
	}
	ca := s.Data[desired.CACertKey]
	var cert, key []byte
	if clientSecret != "" {
		cs, err := r.secret(ctx, m.Namespace, clientSecret)
		if err != nil {
			return nil, "", err
		}
		cert, key = cs.Data[secretCertKey], cs.Data[secretKeyKey]
	}
	serverName := desired.MemberHost(m.Name, desired.MemberServiceName(m), m.Namespace)
	t, err := tlsConfig(ca, cert, key, serverName)
	if err != nil {
		return nil, "", err
	}
	return t, etcdclient.DigestTLSMaterial(ca, cert, key), nil
}

// tlsConfig builds a client TLS configuration from PEM material. cert and key are both empty
// without mutual TLS.
func tlsConfig(ca, cert, key []byte, serverName string) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%w: no CA certificate in %s", errTLSMaterial, desired.CACertKey)
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, ServerName: serverName}
	if len(cert) > 0 || len(key) > 0 {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			// The parse error may quote key material; say only what is wrong.
			return nil, fmt.Errorf("%w: the operator client certificate and key do not form a pair", errTLSMaterial)
		}
		t.Certificates = []tls.Certificate{pair}
	}
	return t, nil
}

// secret reads a Secret uncached, by name.
func (r *Reconciler) secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, s); err != nil {
		return nil, fmt.Errorf("reading Secret %s: %w", name, err)
	}
	return s, nil
}
