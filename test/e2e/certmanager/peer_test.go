//go:build e2e

package certmanager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdconn"
)

const (
	// etcdVersion is the version of config/samples/etcdcluster.yaml, whose image the local
	// cluster imports.
	etcdVersion = "3.6.16"
	// bootstrapTimeout bounds a 3-member cluster's bootstrap, certificates included.
	bootstrapTimeout = 5 * time.Minute
	// etcdCallTimeout bounds each call the test makes to etcd.
	etcdCallTimeout = 3 * time.Second
)

// TestPeerTLSFromCertManager creates a 3-member cluster whose peer certificate comes from
// cert-manager (spec.tls.peer.certManager, a CA Issuer): the operator creates Certificate
// <cluster>-peer, owned by the cluster; cert-manager writes Secret <cluster>-peer-tls, labelled
// like the cluster's objects; the members form over peer mTLS (every peer URL https) and the
// cluster converges, Available=True/QuorumHealthy with 3 Ready members.
func TestPeerTLSFromCertManager(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Security)
	requireOperator(t, f)
	if err := f.InstallCertManager(f.Ctx); err != nil {
		t.Fatal(err)
	}
	caIssuers(t, f, "etcd-ca")
	c, err := f.NewClient(etcdv1alpha2.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ec := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: "etcd"},
		Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](3), Version: etcdVersion,
			Storage: etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))},
			TLS: &etcdv1alpha2.EtcdClusterTLS{Peer: &etcdv1alpha2.PeerTLS{CertManager: &etcdv1alpha2.PeerCertManagerTLS{
				IssuerRef: etcdv1alpha2.IssuerReference{Name: "etcd-ca"}}}}},
	}
	if err := c.Create(f.Ctx, ec); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, f, c, ec.Name, 3)
	f.Record("bootstrap-3-peer-tls-cert-manager", time.Since(start), "3 members, peer certificate from cert-manager (Certificate created by the operator)")

	if err := c.Get(f.Ctx, client.ObjectKeyFromObject(ec), ec); err != nil {
		t.Fatal(err)
	}
	cert, err := f.Dynamic.Resource(certificates).Namespace(f.Namespace).Get(f.Ctx, "etcd-peer", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the operator's Certificate: %v", err)
	}
	if ref := metav1.GetControllerOf(cert); ref == nil || ref.UID != ec.UID {
		t.Errorf("Certificate etcd-peer is controlled by %+v, want the EtcdCluster %s", ref, ec.UID)
	}
	secret, err := f.Kube.CoreV1().Secrets(f.Namespace).Get(f.Ctx, "etcd-peer-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := secret.Labels[etcdv1alpha2.LabelCluster]; got != ec.Name {
		t.Errorf("Secret etcd-peer-tls has cluster label %q, want %q (secretTemplate)", got, ec.Name)
	}
	ml, err := memberList(f, ec.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ml.Members {
		for _, u := range m.PeerURLs {
			if !strings.HasPrefix(u, "https://") {
				t.Errorf("member %s has peer URL %s, want https", m.Name, u)
			}
		}
	}
}

// requireOperator skips the test when the operator is not deployed.
func requireOperator(t *testing.T, f *framework.Test) {
	t.Helper()
	if _, err := f.OperatorDeployment(f.Ctx); errors.Is(err, framework.ErrNoOperator) {
		t.Skip("the operator is not deployed (make deploy)")
	} else if err != nil {
		t.Fatal(err)
	}
}

// waitAvailable waits until cluster name reports n Ready members and Available=True/QuorumHealthy
// for its current generation.
func waitAvailable(t *testing.T, f *framework.Test, c client.Client, name string, n int32) {
	t.Helper()
	err := f.Poll(fmt.Sprintf("EtcdCluster %s Available with %d Ready members", name, n), bootstrapTimeout, func(ctx context.Context) (bool, string, error) {
		ec := &etcdv1alpha2.EtcdCluster{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: f.Namespace, Name: name}, ec); err != nil {
			return false, err.Error(), nil
		}
		avail := meta.FindStatusCondition(ec.Status.Conditions, etcdv1alpha2.ConditionAvailable)
		state := fmt.Sprintf("%d Ready members; Available %+v", ec.Status.ReadyMembers, avail)
		return ec.Status.ObservedGeneration == ec.Generation && ec.Status.ReadyMembers == n &&
			avail != nil && avail.Status == metav1.ConditionTrue && avail.Reason == "QuorumHealthy", state, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// memberList asks the members of cluster name, by Pod IP over plaintext client connections,
// for etcd's member list; the first that answers wins.
func memberList(f *framework.Test, name string) (*clientv3.MemberListResponse, error) {
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: etcdv1alpha2.LabelCluster + "=" + name})
	if err != nil {
		return nil, err
	}
	eps, _ := etcdconn.PodEndpoints(pods.Items, etcdconn.ClientPort, false)
	var errs []error
	for _, ep := range eps {
		ctx, cancel := context.WithTimeout(f.Ctx, etcdCallTimeout)
		cli, err := etcdconn.New(ctx, etcdconn.Options{Endpoints: []string{ep}, DialTimeout: etcdCallTimeout})
		if err == nil {
			var ml *clientv3.MemberListResponse
			ml, err = cli.MemberList(ctx)
			_ = cli.Close()
			if err == nil {
				cancel()
				return ml, nil
			}
		}
		cancel()
		errs = append(errs, fmt.Errorf("%s: %w", ep, err))
	}
	return nil, fmt.Errorf("no member of %s answered MemberList: %w", name, errors.Join(errs...))
}
