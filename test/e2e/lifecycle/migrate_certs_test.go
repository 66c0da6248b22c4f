//go:build e2e

package lifecycle

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// reissueCertificates is the runbook's step for a plan that warned CertificateSANs
// (docs/migration.md, "Certificates after a TLS migration"): the server certificate, and under
// peer TLS the peer certificate, are issued again by the same CAs with this operator's names
// next to the legacy ones, and written into both Secrets that hold each: the legacy one the
// adopted Pods mount and the <c>-migrated-* copy the EtcdCluster names (and members added or
// rolled later mount). It first checks that the operator held new members for the legacy
// certificates (Degraded CertificateInvalid), then waits until every adopted member serves
// the new certificates (the kubelet refreshes Secret volumes; etcd reads the files at each
// handshake) and the operator no longer reports a certificate problem.
func (r *legacyRun) reissueCertificates(f *framework.Test) {
	f.T.Helper()
	ec, err := getCluster(f.Ctx, f, legacyName)
	if err != nil {
		f.T.Fatal(err)
	}
	if c := meta.FindStatusCondition(ec.Status.Conditions, etcdv1alpha2.ConditionDegraded); c == nil || c.Reason != "CertificateInvalid" {
		f.T.Errorf("adopted cluster with the legacy certificates: Degraded %+v, want reason CertificateInvalid (the plan's CertificateSANs)", c)
	}
	certs, err := r.set.Reissued()
	if err != nil {
		f.T.Fatal(err)
	}
	legacyTLS := r.set.Cluster.TLS()
	holders := map[string][]string{legacyfixture.CAServer: {legacyTLS.ServerSecret, ec.Spec.TLS.Client.ServerSecretRef.Name}}
	if ec.Spec.TLS.Peer != nil && ec.Spec.TLS.Peer.SecretRef != nil {
		holders[legacyfixture.CAPeer] = []string{legacyTLS.PeerSecret, ec.Spec.TLS.Peer.SecretRef.Name}
	}
	start := time.Now()
	for role, names := range holders {
		for _, name := range names {
			r.replaceKeyPair(f, name, certs[role])
		}
	}
	want := map[string][]byte{"2379": certs[legacyfixture.CAServer][corev1.TLSCertKey]}
	if p, ok := certs[legacyfixture.CAPeer]; ok {
		want["2380"] = p[corev1.TLSCertKey]
	}
	waitServingReissued(f, want)
	f.Record("migrate-reissue-served", since(start), "re-issued certificates written → served by every adopted member")
	waitNoCertificateProblem(f, legacyName)
	f.T.Logf("re-issued certificates served and accepted in %s", since(start))
}

// replaceKeyPair puts pair's tls.crt and tls.key into Secret name, keeping its ca.crt.
func (r *legacyRun) replaceKeyPair(f *framework.Test, name string, pair map[string][]byte) {
	f.T.Helper()
	s, err := f.Kube.CoreV1().Secrets(f.Namespace).Get(f.Ctx, name, metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey] = pair[corev1.TLSCertKey], pair[corev1.TLSPrivateKeyKey]
	if _, err := f.Kube.CoreV1().Secrets(f.Namespace).Update(f.Ctx, s, metav1.UpdateOptions{}); err != nil {
		f.T.Fatalf("re-issuing into Secret %s: %v", name, err)
	}
}

// waitServingReissued waits until every member Pod of the adopted cluster serves, on each
// port, the certificate want holds for it (PEM).
func waitServingReissued(f *framework.Test, want map[string][]byte) {
	f.T.Helper()
	if err := f.Poll("every adopted member serving the re-issued certificates", 5*time.Minute, func(ctx context.Context) (bool, string, error) {
		pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: legacySelector()})
		if err != nil {
			return false, "", err
		}
		for _, p := range pods.Items {
			for port, pemCert := range want {
				block, _ := pem.Decode(pemCert)
				got, err := servedCert(p.Status.PodIP + ":" + port)
				if err != nil || block == nil || !bytes.Equal(got.Raw, block.Bytes) {
					return false, fmt.Sprintf("%s:%s still serves the legacy certificate (%v)", p.Name, port, err), nil
				}
			}
		}
		return true, "", nil
	}); err != nil {
		f.T.Fatal(err)
	}
}

// waitNoCertificateProblem waits until cluster name reports no certificate problem.
func waitNoCertificateProblem(f *framework.Test, name string) {
	f.T.Helper()
	if err := f.Poll("no CertificateInvalid on "+name, 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		ec, err := getCluster(ctx, f, name)
		if err != nil {
			return false, err.Error(), nil
		}
		c := meta.FindStatusCondition(ec.Status.Conditions, etcdv1alpha2.ConditionDegraded)
		if c != nil && c.Reason == "CertificateInvalid" {
			return false, c.Message, nil
		}
		return true, "", nil
	}); err != nil {
		f.T.Fatal(err)
	}
}
