//go:build e2e

package lifecycle

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/testpki"
	"github.com/etcd-operator/etcd-operator/test/utils/traffic"
)

// rotationTimeout bounds a whole managed rotation or move: two rolling updates of three members,
// the two-minute dwell between steps 2 and 3, and, in the rotation test, two operator restarts.
const rotationTimeout = 15 * time.Minute

// TestManagedCARotationUnderTraffic rotates both CAs of an operator-managed mTLS + auth cluster
// on request (the rotate-ca annotation, docs/tls.md, "CA rotation") under write traffic from a
// client that follows <c>-ca as the docs ask, and kills the operator (SIGKILL) right after step
// 1 and right after step 2 of each CA: the rotation must resume from what the CA Secrets hold,
// finish with each step announced once per CA, leave one CA in every bundle, and fail no client
// request. The application certificate of the old CA is refused at the end.
//
// Not parallel: it kills the one operator every other scenario depends on.
func TestManagedCARotationUnderTraffic(t *testing.T) {
	f := framework.NewTest(t, framework.Security, framework.Disruptive)
	requireOperator(f)
	const name = "mcarot"
	createPasswordSecret(f, name+"-root", "e2e-Rotate-Pw-7k3q")
	ec := newCluster(f, name, 3)
	ec.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Managed: &etcdv1alpha2.ManagedTLS{}}
	ec.Spec.Auth = &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: name + "-root"}}
	createCluster(f, ec)
	waitSecret(f, name+"-ca")
	oldCA := readCA(f, name+"-ca")
	oldApp := issueFrom(f, oldCA, testpki.Leaf{CommonName: "root", Usages: testpki.ClientOnly})
	app, cfg := newFollowingClient(f, name, desired.MemberHost(name+"-e2e", name, f.Namespace), secretData(f, name+"-ca")["ca.crt"], oldApp, oldCA.Cert)
	stopFollow := app.follow()
	waitConverged(f, name, 3, bootstrapTimeout)
	waitAuthLatched(f, name)

	_, endpoints := dialVoters(f, name)
	gen := traffic.New(traffic.Config{Endpoints: endpoints, Rate: trafficRate, MaxRequests: 1_000_000, MaxDuration: 30 * time.Minute, TLS: cfg})
	stop := runTraffic(f, gen)
	stopFollowing := f.FollowEndpoints(gen, voterSelector(name), true)
	waitAcked(f, gen, 50)

	start := time.Now()
	annotateCluster(f, name, etcdv1alpha2.AnnotationRotateCA, "e2e-1")
	waitEventCount(f, name, "CARotationStarted", 1, rotationTimeout)
	f.Record("managed-ca-rotation-1-started", since(start), "rotate-ca annotated → first CA staged")
	killOperator(f)
	waitEventCount(f, name, "CARotationLeavesReissued", 1, rotationTimeout)
	f.Record("managed-ca-rotation-2-reissued", since(start), "rotate-ca annotated → the first CA's leaves re-issued (one roll, one operator kill)")
	killOperator(f)
	waitEventCount(f, name, "CARotationCompleted", 2, rotationTimeout)
	waitRolledAfter(f, name, "CARotationCompleted", 3, rotationTimeout)
	f.Record("managed-ca-rotation-total", since(start), "rotate-ca annotated → both CAs rotated and the cluster converged (two rolls, two operator kills)")

	waitAcked(f, gen, gen.Stats().AckedPuts+50)
	stopFollowing()
	res := stop()
	stopFollow()
	requireNoFailedRequests(f, res, "managed-ca-rotation", "a managed rotation of both CAs with two operator kills")

	for _, reason := range []string{"CARotationStarted", "CARotationLeavesReissued", "CARotationCompleted"} {
		if n := eventCount(f, name, reason); n != 2 {
			t.Errorf("%d %s Events, want 2 (one per CA): a step was repeated or skipped across the operator kills", n, reason)
		}
	}
	for _, secret := range []string{name + "-ca", name + "-peer-ca"} {
		if n := caBundleCount(f, secret); n != 1 {
			t.Errorf("ca.crt of %s holds %d certificates after the rotation, want 1", secret, n)
		}
	}
	newCA := readCA(f, name+"-ca")
	if newCA.Cert.Equal(oldCA.Cert) {
		t.Fatal("the client CA signs as before the rotation")
	}
	requireServedBy(f, name, "2379", newCA.Cert.Subject.CommonName)
	requireServedBy(f, name, "2380", readCA(f, name+"-peer-ca").Cert.Subject.CommonName)
	if app.switches.Load() != 1 {
		t.Errorf("the client switched its certificate %d times, want once", app.switches.Load())
	}
	requireRefused(f, name, oldApp, "an application certificate of the rotated-out CA")
}

// TestMoveToManagedTLSUnderTraffic moves a cluster on the user's own Secrets (client and peer
// mTLS, auth) to operator-managed certificates (docs/tls.md, "Moving to managed certificates")
// under write traffic from a client that follows <c>-ca: no client request may fail, the members
// end on the managed Secrets serving leaves of the managed CAs, the user's CAs leave the
// bundles, and the user's client certificate is refused at the end.
func TestMoveToManagedTLSUnderTraffic(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Security)
	requireOperator(f)
	const name = "tomanaged"
	byo := newBYOPKI(f, name)
	createPasswordSecret(f, name+"-root", "e2e-Move-Pw-2d9v")
	ec := newCluster(f, name, 3)
	ec.Spec.TLS = byo.spec(name)
	ec.Spec.Auth = &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: name + "-root"}}
	createCluster(f, ec)
	app, cfg := newFollowingClient(f, name, byo.serverName, byo.clientCA.CertPEM, byo.root, firstCert(f, byo.clientCA.CertPEM))
	waitConverged(f, name, 3, bootstrapTimeout)
	waitAuthLatched(f, name)
	stopFollow := app.follow()

	_, endpoints := dialVoters(f, name)
	gen := traffic.New(traffic.Config{Endpoints: endpoints, Rate: trafficRate, MaxRequests: 1_000_000, MaxDuration: 30 * time.Minute, TLS: cfg})
	stop := runTraffic(f, gen)
	stopFollowing := f.FollowEndpoints(gen, voterSelector(name), true)
	waitAcked(f, gen, 50)

	start := time.Now()
	patch := []byte(`{"spec":{"tls":{"client":null,"peer":null,"managed":{}}}}`)
	if err := kc(f).Patch(f.Ctx, &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("moving to managed TLS: %v", err)
	}
	waitEventCount(f, name, "CARotationCompleted", 2, rotationTimeout)
	if err := f.Poll("every member on the managed Secrets", rotationTimeout, func(ctx context.Context) (bool, string, error) {
		return mountsManaged(ctx, f, name)
	}); err != nil {
		t.Fatal(err)
	}
	waitRolledAfter(f, name, "CARotationCompleted", 3, rotationTimeout)
	f.Record("move-to-managed-tls-total", since(start), "spec.tls patched to managed → both CAs moved and the cluster converged (two rolls)")

	waitAcked(f, gen, gen.Stats().AckedPuts+50)
	stopFollowing()
	res := stop()
	stopFollow()
	requireNoFailedRequests(f, res, "move-to-managed-tls", "the move from the user's Secrets to managed certificates (mTLS + auth)")

	for _, secret := range []string{name + "-ca", name + "-peer-ca"} {
		if n := caBundleCount(f, secret); n != 1 {
			t.Errorf("ca.crt of %s holds %d certificates after the move, want 1", secret, n)
		}
	}
	requireServedBy(f, name, "2379", readCA(f, name+"-ca").Cert.Subject.CommonName)
	requireServedBy(f, name, "2380", readCA(f, name+"-peer-ca").Cert.Subject.CommonName)
	if app.switches.Load() != 1 {
		t.Errorf("the client switched its certificate %d times, want once", app.switches.Load())
	}
	requireRefused(f, name, byo.root, "a client certificate of the user's CA after the move")
}

// annotateCluster sets annotation key to value on cluster name.
func annotateCluster(f *framework.Test, name, key, value string) {
	f.T.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if err != nil {
		f.T.Fatal(err)
	}
	if err := kc(f).Patch(f.Ctx, &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
		f.T.Fatalf("annotating EtcdCluster %s: %v", name, err)
	}
}
