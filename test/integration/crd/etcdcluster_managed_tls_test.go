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

// TestEtcdClusterManagedTLSRules covers rule 27 (spec.tls.managed excludes client and peer) and
// how rules 3, 4, 9 and 25 read managed: it is client TLS with client certificates.
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
		// Rule 9: managed is client TLS.
		{name: "auth with managed", create: fns(withManagedAuth)},
		// Rule 25: managed clients are authenticated by their certificates.
		{name: "load balancer with managed", create: fns(withManagedTLS, withClientService("LoadBalancer", false))},
		{name: "node port with managed and auth", create: fns(withManagedAuth, withClientService("NodePort", false))},
	})
}
