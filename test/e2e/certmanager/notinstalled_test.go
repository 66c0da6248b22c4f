//go:build e2e

package certmanager

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// probeTimeout bounds a wait for the operator to notice cert-manager's API appear or go: it
// trusts each answer of its probe for 60 s (docs/tls.md, "cert-manager").
const probeTimeout = 3 * time.Minute

// TestCertManagerNotInstalledThenInstalled removes cert-manager from the cluster, creates a
// 1-member cluster asking it for the peer certificate, and expects Available=False/
// CertManagerNotInstalled with no member; then installs cert-manager and an issuer, and expects
// the operator to create the Certificate and the cluster to become Available, with no operator
// restart. Not parallel: removing cert-manager takes it away from every test of the cluster
// (framework.RemoveCertManager), so it runs before this package's parallel tests, and is
// labelled disruptive.
func TestCertManagerNotInstalledThenInstalled(t *testing.T) {
	f := framework.NewTest(t, framework.Security, framework.Disruptive)
	requireOperator(t, f)
	start := time.Now()
	if err := f.RemoveCertManager(f.Ctx); err != nil {
		t.Fatal(err)
	}
	f.Record("cert-manager-remove", time.Since(start), "Deployment, CRDs (with every cert-manager object), RBAC, namespace")
	c, err := f.NewClient(etcdv1alpha2.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	ec := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: "etcd"},
		Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](1), Version: etcdVersion,
			Storage: etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))},
			TLS: &etcdv1alpha2.EtcdClusterTLS{Peer: &etcdv1alpha2.PeerTLS{CertManager: &etcdv1alpha2.PeerCertManagerTLS{
				IssuerRef: etcdv1alpha2.IssuerReference{Name: "etcd-ca"}}}}},
	}
	if err := c.Create(f.Ctx, ec); err != nil {
		t.Fatal(err)
	}
	err = f.Poll("Available=False/CertManagerNotInstalled", probeTimeout, func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ec), ec); err != nil {
			return false, err.Error(), nil
		}
		avail := meta.FindStatusCondition(ec.Status.Conditions, etcdv1alpha2.ConditionAvailable)
		return avail != nil && avail.Status == metav1.ConditionFalse && avail.Reason == "CertManagerNotInstalled",
			fmt.Sprintf("Available %+v", avail), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var members etcdv1alpha2.EtcdMemberList
	if err := c.List(f.Ctx, &members, client.InNamespace(f.Namespace)); err != nil {
		t.Fatal(err)
	}
	if len(members.Items) != 0 {
		t.Fatalf("%d EtcdMembers exist although cert-manager is not installed", len(members.Items))
	}

	start = time.Now()
	if err := f.InstallCertManager(f.Ctx); err != nil {
		t.Fatal(err)
	}
	caIssuers(t, f, "etcd-ca")
	waitAvailable(t, f, c, ec.Name, 1)
	f.Record("cert-manager-installed-to-available", time.Since(start), "install, issuer, operator re-probes (≤ 60 s), Certificate, 1 member Available")
}
