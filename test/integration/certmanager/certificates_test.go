package certmanager_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/certmanager"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/test/utils/apiserver"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

const (
	// domain is the cluster domain the controller is given, so the SANs show it is used.
	domain = "example.org"
	// passTimeout bounds a wait for something the next pass does: passes of a cluster whose
	// TLS Secrets are missing come every membership.TLSSecretWait.
	passTimeout = membership.TLSSecretWait + 20*time.Second
)

var errNotYet = errors.New("not yet")

// startController runs the EtcdCluster controller in a manager whose cache sees namespace ns
// only. The cert-manager probe is the real, discovery-backed one unless opts replace it.
func startController(t *testing.T, ns string, opts ...etcdcluster.Option) {
	t.Helper()
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("creating a manager: %v", err)
	}
	pool := etcdclient.NewPool()
	opts = append([]etcdcluster.Option{etcdcluster.WithClusterDomain(domain)}, opts...)
	if err := etcdcluster.NewFromManager(mgr, pool, opts...).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		_ = pool.Close()
	})
}

// Spec TLS of the tests' clusters: every certificate from cert-manager (server and operator
// client from a ClusterIssuer, peer from an Issuer), or peer certificates only.
var (
	clusterCA = etcdv1alpha2.IssuerReference{Name: "root-ca", Kind: "ClusterIssuer"}
	peerTLS   = &etcdv1alpha2.PeerTLS{CertManager: &etcdv1alpha2.PeerCertManagerTLS{IssuerRef: etcdv1alpha2.IssuerReference{Name: "peer-ca"}}}
	allTLS    = &etcdv1alpha2.EtcdClusterTLS{
		Client: &etcdv1alpha2.ClientTLS{CertManager: &etcdv1alpha2.ClientCertManagerTLS{ServerIssuerRef: clusterCA, OperatorClientIssuerRef: &clusterCA}},
		Peer:   peerTLS,
	}
)

// newCluster creates a 1-member cluster with tls.
func newCluster(t *testing.T, ns, name string, tls *etcdv1alpha2.EtcdClusterTLS) *etcdv1alpha2.EtcdCluster {
	t.Helper()
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](1), Version: "3.6.5",
			Storage: etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))}, TLS: tls.DeepCopy()},
	}
	if err := k8s.Create(t.Context(), c); err != nil {
		t.Fatalf("creating EtcdCluster %s: %v", name, err)
	}
	return c
}

// certificate reads Certificate name of ns; nil when it does not exist.
func certificate(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(certmanager.GroupVersionKind)
	err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return u, err
}

// matches checks that have is want as the API server stores it: spec, labels and the
// controlling ownerReference; nothing else of metadata is the operator's.
func matches(have, want *unstructured.Unstructured) error {
	if diff := cmp.Diff(want.Object["spec"], have.Object["spec"]); diff != "" {
		return fmt.Errorf("Certificate %s spec (-want +have):\n%s", want.GetName(), diff)
	}
	if diff := cmp.Diff(want.GetLabels(), have.GetLabels()); diff != "" {
		return fmt.Errorf("Certificate %s labels (-want +have):\n%s", want.GetName(), diff)
	}
	if diff := cmp.Diff(want.GetOwnerReferences(), have.GetOwnerReferences()); diff != "" {
		return fmt.Errorf("Certificate %s ownerReferences (-want +have):\n%s", want.GetName(), diff)
	}
	return nil
}

// eventCount counts the Events of reason on cluster name.
func eventCount(t *testing.T, ns, name, reason string) int {
	t.Helper()
	var evs eventsv1.EventList
	if err := k8s.List(t.Context(), &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			n += max(1, int(ptr.Deref(e.Series, eventsv1.EventSeries{Count: 1}).Count))
		}
	}
	return n
}

// TestCertificatesCreatedOnceRecreatedNeverPatched: with cert-manager's API served, a cluster
// asking cert-manager for its certificates gets the three Certificates exactly as
// internal/certmanager renders them (one CertificateCreated Event each); a deleted one comes
// back on a later pass; an edited one keeps the edit (never patched) and is not created again.
func TestCertificatesCreatedOnceRecreatedNeverPatched(t *testing.T) {
	t.Parallel()
	ns := apiserver.NewNamespace(t, k8s, "certmanager-")
	startController(t, ns)
	c := newCluster(t, ns, "etcd", allTLS)
	wants := certmanager.Certificates(c, domain)
	if len(wants) != 3 {
		t.Fatalf("the renderer gave %d Certificates, want 3", len(wants))
	}
	for _, want := range wants {
		wait.Eventually(t, passTimeout, "Certificate "+want.GetName(), func() error {
			have, err := certificate(t.Context(), ns, want.GetName())
			if err != nil || have == nil {
				return errors.Join(err, errNotYet)
			}
			return matches(have, want)
		})
	}
	wait.Eventually(t, passTimeout, "3 CertificateCreated Events", func() error {
		if n := eventCount(t, ns, c.Name, "CertificateCreated"); n != 3 {
			return fmt.Errorf("%d CertificateCreated Events: %w", n, errNotYet)
		}
		return nil
	})

	recreatedAfterDelete(t, ns, wants[1])
	notPatchedAfterEdit(t, ns, certmanager.ServerCertificateName(c.Name))
	if n := eventCount(t, ns, c.Name, "CertificateCreated"); n != 4 {
		t.Errorf("%d CertificateCreated Events, want 4 (three, and the recreated peer Certificate)", n)
	}
}

// notInstalled is a cert-manager probe that says the API is not served.
type notInstalled struct{}

func (notInstalled) CertManagerInstalled() (bool, error) { return false, nil }

// TestNoCertificatesWithoutCertManager: while the probe says cert-manager's API is not served,
// a cluster asking cert-manager for its peer certificate waits as
// Available=False/CertManagerNotInstalled, and no Certificate is created (here the CRDs exist,
// so a create would have succeeded).
func TestNoCertificatesWithoutCertManager(t *testing.T) {
	t.Parallel()
	ns := apiserver.NewNamespace(t, k8s, "certmanager-")
	startController(t, ns, etcdcluster.WithCertManagerProbe(notInstalled{}))
	c := newCluster(t, ns, "etcd", &etcdv1alpha2.EtcdClusterTLS{Peer: peerTLS})
	wait.Eventually(t, passTimeout, "Available=False/CertManagerNotInstalled", func() error {
		got := &etcdv1alpha2.EtcdCluster{}
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(c), got); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha2.ConditionAvailable)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != membership.ReasonCertManagerNotInstalled {
			return fmt.Errorf("Available = %+v: %w", cond, errNotYet)
		}
		return nil
	})
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(certmanager.GroupVersionKind.GroupVersion().WithKind("CertificateList"))
	if err := k8s.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("%d Certificates created although cert-manager is not installed", len(list.Items))
	}
}

// recreatedAfterDelete deletes Certificate want and waits until a later pass creates it again
// (a new UID) as rendered.
func recreatedAfterDelete(t *testing.T, ns string, want *unstructured.Unstructured) {
	t.Helper()
	name := want.GetName()
	old, err := certificate(t.Context(), ns, name)
	if err != nil || old == nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	if err := k8s.Delete(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, passTimeout, name+" recreated", func() error {
		have, err := certificate(t.Context(), ns, name)
		if err != nil || have == nil || have.GetUID() == old.GetUID() {
			return errors.Join(err, errNotYet)
		}
		return matches(have, want)
	})
}

// notPatchedAfterEdit edits Certificate server as a user would and checks, across two passes,
// that the operator neither reverts nor rewrites it.
func notPatchedAfterEdit(t *testing.T, ns, server string) {
	t.Helper()
	edited, err := certificate(t.Context(), ns, server)
	if err != nil || edited == nil {
		t.Fatalf("reading %s: %v", server, err)
	}
	if err := unstructured.SetNestedField(edited.Object, "2160h0m0s", "spec", "duration"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedStringSlice(edited.Object, []string{"localhost"}, "spec", "dnsNames"); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Update(t.Context(), edited); err != nil {
		t.Fatal(err)
	}
	// Across two passes (every TLSSecretWait while the Secrets are missing) the edit stays and
	// the object is never written again.
	wait.Consistently(t, 2*membership.TLSSecretWait+5*time.Second, server+" keeps the user's edit", func() error {
		have, err := certificate(t.Context(), ns, server)
		switch {
		case err != nil:
			return err
		case have == nil:
			return errors.New("the edited Certificate is gone")
		case have.GetResourceVersion() != edited.GetResourceVersion():
			return fmt.Errorf("the edited Certificate was written again (resourceVersion %s, edited at %s)", have.GetResourceVersion(), edited.GetResourceVersion())
		}
		return nil
	})
}
