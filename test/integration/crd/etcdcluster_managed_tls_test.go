package crd_test

import (
	"testing"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func withManagedTLS(c *etcdv1alpha2.EtcdCluster) {
	c.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Managed: &etcdv1alpha2.ManagedTLS{}}
}

func withManagedAuth(c *etcdv1alpha2.EtcdCluster) {
	withManagedTLS(c)
	c.Spec.Auth = &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: secretRef("root")}
}

// withOwnTLS gives the cluster client TLS from a Secret, with the operator's client certificate
// (mutual TLS) when mtls, and peer TLS from a Secret when peer.
func withOwnTLS(mtls, peer bool) func(*etcdv1alpha2.EtcdCluster) {
	return func(c *etcdv1alpha2.EtcdCluster) {
		c.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: secretRef("server")}}
		if mtls {
			c.Spec.TLS.Client.OperatorClientSecretRef = secretRef("operator")
		}
		if peer {
			c.Spec.TLS.Peer = &etcdv1alpha2.PeerTLS{SecretRef: secretRef("peer")}
		}
	}
}

func withOwnAuth(c *etcdv1alpha2.EtcdCluster) {
	c.Spec.Auth = &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: secretRef("root")}
}

// moveToManaged replaces spec.tls with managed: {} (docs/tls.md, "Moving to managed").
func moveToManaged(c *etcdv1alpha2.EtcdCluster) { withManagedTLS(c) }

// TestEtcdClusterManagedTLSRules covers rule 27 (spec.tls.managed excludes client and peer),
// rule 28 and the move of rule 4 (your own Secrets to managed, with client and peer TLS), and how
// rules 3, 4, 9 and 25 read managed: it is client TLS with client certificates.
func TestEtcdClusterManagedTLSRules(t *testing.T) {
	t.Parallel()
	runClusterCases(t, []clusterCase{
		// Rule 27.
		{name: "managed alone", create: fns(withManagedTLS)},
		{name: "managed with client", create: fns(withManagedTLS, func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.TLS.Client = &etcdv1alpha2.ClientTLS{ServerSecretRef: secretRef("server")}
		}), wantField: "spec.tls", wantMsg: etcdv1alpha2.MsgManagedTLSExclusive},
		{name: "managed with peer", create: fns(withManagedTLS, func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.TLS.Peer = &etcdv1alpha2.PeerTLS{SecretRef: secretRef("peer")}
		}), wantField: "spec.tls", wantMsg: etcdv1alpha2.MsgManagedTLSExclusive},
		// Rules 3 and 4 hold for managed as for any TLS.
		{name: "managed added", update: withManagedTLS, wantField: "spec", wantMsg: etcdv1alpha2.MsgTLSAddRemove},
		{name: "managed swapped for a Secret", create: fns(withManagedTLS), update: withServerTLS,
			wantField: "spec", wantMsg: etcdv1alpha2.MsgTLSImmutable},
		// Rules 4 and 28: the one move, from your own server and peer Secrets to managed.
		{name: "own Secrets moved to managed", create: fns(withOwnTLS(false, true)), update: moveToManaged},
		{name: "own Secrets under mutual TLS moved to managed", create: fns(withOwnTLS(true, true)), update: moveToManaged},
		{name: "own Secrets with auth moved to managed", create: fns(withOwnTLS(true, true), withOwnAuth), update: moveToManaged},
		{name: "own server Secret without peer TLS moved to managed", create: fns(withOwnTLS(false, false)), update: moveToManaged,
			wantField: "spec", wantMsg: etcdv1alpha2.MsgManagedTLSMoveNeedsTLS},
		{name: "own peer Secret without client TLS moved to managed", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Peer: &etcdv1alpha2.PeerTLS{SecretRef: secretRef("peer")}}
		}), update: moveToManaged, wantField: "spec", wantMsg: etcdv1alpha2.MsgManagedTLSMoveNeedsTLS},
		{name: "cert-manager moved to managed", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			issuer := etcdv1alpha2.IssuerReference{Name: "ca"}
			c.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{
				Client: &etcdv1alpha2.ClientTLS{CertManager: &etcdv1alpha2.ClientCertManagerTLS{ServerIssuerRef: issuer}},
				Peer:   &etcdv1alpha2.PeerTLS{CertManager: &etcdv1alpha2.PeerCertManagerTLS{IssuerRef: issuer}}}
		}), update: moveToManaged, wantField: "spec", wantMsg: etcdv1alpha2.MsgTLSImmutable},
		{name: "own Secrets moved to managed keeping the client Secret", create: fns(withOwnTLS(false, true)),
			update: func(c *etcdv1alpha2.EtcdCluster) {
				c.Spec.TLS.Peer, c.Spec.TLS.Managed = nil, &etcdv1alpha2.ManagedTLS{}
			},
			wantField: "spec.tls", wantMsg: etcdv1alpha2.MsgManagedTLSExclusive},
		// Rule 9: managed is client TLS.
		{name: "auth with managed", create: fns(withManagedAuth)},
		// Rule 25: managed clients are authenticated by their certificates.
		{name: "load balancer with managed", create: fns(withManagedTLS, withClientService("LoadBalancer", false))},
		{name: "node port with managed and auth", create: fns(withManagedAuth, withClientService("NodePort", false))},
	})
}
