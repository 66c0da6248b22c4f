package translate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

const fixed = legacyfixture.Plaintext

func TestPlaintextClusterTranslation(t *testing.T) {
	t.Parallel()
	in, _ := inspected(t, legacyfixture.Options{Name: "etcd", Namespace: "tenant-a", Variant: fixed, Formed: true}, translate.Config{})
	r := translate.Translate(in)
	if r.Refused() {
		t.Fatalf("refused: %+v", r.Refusals)
	}
	c := r.Cluster
	wantSpec := etcdv1alpha2.EtcdClusterSpec{
		Replicas: ptr.To(int32(3)),
		Version:  "3.5.12",
		Storage: etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("4Gi")), StorageClassName: ptr.To("standard"),
			ReclaimPolicy: etcdv1alpha2.ReclaimPolicyRetain},
		Options: &etcdv1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To(int64(4080218931)), AutoCompactionRetention: "5m", SnapshotCount: ptr.To(int64(10000))},
	}
	if diff := cmp.Diff(wantSpec, c.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	wantAnn := map[string]string{
		etcdv1alpha2.AnnotationAdoptionInProgress: "true",
		etcdv1alpha2.AnnotationMigratedFrom:       "etcd.aenix.io/v1alpha1",
		etcdv1alpha2.AnnotationPeerAutoTLS:        "true",
	}
	if diff := cmp.Diff(wantAnn, c.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if c.Name != "etcd" || c.Namespace != "tenant-a" {
		t.Errorf("name %s/%s", c.Namespace, c.Name)
	}
	st := c.Status
	if st.ClusterID != legacyfixture.ClusterID || st.ClusterToken != "etcd-tenant-a" || st.ObservedGeneration != 1 ||
		st.Observed == nil || st.Observed.Replicas != 3 || st.Observed.Version != "3.5.12" {
		t.Errorf("status prefill = %+v", st)
	}
	wantMembers := []translate.Member{}
	for i, pod := range []string{"etcd-0", "etcd-1", "etcd-2"} {
		wantMembers = append(wantMembers, translate.Member{Name: pod, ID: legacyfixture.MemberID(i), PodUID: "pod-uid-" + pod,
			PVCName: "data-" + pod, PeerURL: "https://" + pod + ".etcd-headless.tenant-a.svc:2380"})
	}
	if diff := cmp.Diff(wantMembers, r.Members); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
	if r.HeadlessService != "etcd-headless" || r.ClientService != "etcd" || r.DataDirSubPath != "default.etcd" {
		t.Errorf("layout: headless %s client %s subpath %s", r.HeadlessService, r.ClientService, r.DataDirSubPath)
	}
	wantSec := translate.Security{ClientTLS: "none", PeerTLS: "auto", PeerAutoTLS: true}
	if diff := cmp.Diff(wantSec, r.Security); diff != "" {
		t.Errorf("security (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]translate.Code{translate.WarnPeerAutoTLS, translate.WarnSecurityContext}, codes(r.Warnings)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if f, _ := find(r.Warnings, translate.WarnPeerAutoTLS); !f.Security {
		t.Error("the peer-auto-tls warning is not marked as a security finding")
	}
	if len(r.Secrets) != 0 {
		t.Errorf("secrets = %+v", r.Secrets)
	}
}

func TestSixSecretTLSWithAuthTranslation(t *testing.T) {
	t.Parallel()
	in, s := inspected(t, legacyfixture.Options{Name: "etcd", Namespace: "tenant-a", Variant: legacyfixture.TLS, Auth: true, Formed: true}, translate.Config{})
	r := translate.Translate(in)
	if r.Refused() {
		t.Fatalf("refused: %+v", r.Refusals)
	}
	wantTLS := &etcdv1alpha2.EtcdClusterTLS{
		Client: &etcdv1alpha2.ClientTLS{
			ServerSecretRef:         &corev1.LocalObjectReference{Name: "etcd-migrated-server-tls"},
			OperatorClientSecretRef: &corev1.LocalObjectReference{Name: "etcd-client-tls"},
		},
		Peer: &etcdv1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: "etcd-migrated-peer-tls"}},
	}
	if diff := cmp.Diff(wantTLS, r.Cluster.Spec.TLS); diff != "" {
		t.Errorf("tls (-want +got):\n%s", diff)
	}
	wantAuth := &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: "etcd-root-credentials"}}
	if diff := cmp.Diff(wantAuth, r.Cluster.Spec.Auth); diff != "" {
		t.Errorf("auth (-want +got):\n%s", diff)
	}
	if _, ok := r.Cluster.Annotations[etcdv1alpha2.AnnotationPeerAutoTLS]; ok {
		t.Error("peer-auto-tls set on a cluster with peer certificates")
	}
	byName := map[string]translate.GeneratedSecret{}
	for _, g := range r.Secrets {
		byName[g.Name] = g
	}
	server := byName["etcd-migrated-server-tls"]
	wantBundle := strings.TrimRight(string(s.CAs[legacyfixture.CAServer]), "\n") + "\n" + string(s.CAs[legacyfixture.CAClient])
	if string(server.CABundle) != wantBundle || server.CADigest != desired.CADigest([]byte(wantBundle)) {
		t.Errorf("server bundle is not server CA + client CA (digest %s)", server.CADigest)
	}
	wantKeys := []translate.SecretKey{
		{Key: "tls.crt", From: []string{"etcd-server-tls/tls.crt"}},
		{Key: "tls.key", From: []string{"etcd-server-tls/tls.key"}},
		{Key: "ca.crt", From: []string{"etcd-server-ca/ca.crt", "etcd-client-ca/ca.crt"}},
	}
	if diff := cmp.Diff(wantKeys, server.Keys); diff != "" {
		t.Errorf("server secret keys (-want +got):\n%s", diff)
	}
	if peer := byName["etcd-migrated-peer-tls"]; string(peer.CABundle) != string(s.CAs[legacyfixture.CAPeer]) {
		t.Error("peer bundle is not the peer CA")
	}
	root := byName["etcd-root-credentials"]
	if root.Type != corev1.SecretTypeBasicAuth || !cmp.Equal(root.Keys, []translate.SecretKey{{Key: "username", Value: "root"}, {Key: "password", Random: true}}) {
		t.Errorf("root credentials = %+v", root)
	}
	wantSec := translate.Security{ClientTLS: "mtls", PeerTLS: "mtls", AuthWindow: true,
		CAMerges: []string{"client API: the server CA (etcd-server-ca/ca.crt) and the client CA (etcd-client-ca/ca.crt) become one ca.crt"}}
	if diff := cmp.Diff(wantSec, r.Security); diff != "" {
		t.Errorf("security (-want +got):\n%s", diff)
	}
	wantWarn := []translate.Code{translate.WarnAuthWindow, translate.WarnCAMerge, translate.WarnCertificateSANs, translate.WarnCertificateSANs, translate.WarnSecurityContext}
	if diff := cmp.Diff(wantWarn, codes(r.Warnings)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestCertSecretsWithTheirCAAreUsedAsTheyAre(t *testing.T) {
	t.Parallel()
	in, _ := inspected(t, legacyfixture.Options{Variant: legacyfixture.PeerAutoTLS, CAInCertSecrets: true, Formed: true}, translate.Config{})
	r := translate.Translate(in)
	if r.Refused() {
		t.Fatalf("refused: %+v", r.Refusals)
	}
	want := &etcdv1alpha2.EtcdClusterTLS{Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "etcd-server-tls"}}}
	if diff := cmp.Diff(want, r.Cluster.Spec.TLS); diff != "" {
		t.Errorf("tls (-want +got):\n%s", diff)
	}
	if len(r.Secrets) != 0 || r.Security.ClientTLS != "tls" || !r.Security.PeerAutoTLS || len(r.Security.CAMerges) != 0 {
		t.Errorf("secrets %+v security %+v", r.Secrets, r.Security)
	}
}

// The plan's JSON must never carry key material: translation only sees summaries, and says
// where a generated Secret's keys come from.
func TestNoKeyMaterialInTheResult(t *testing.T) {
	t.Parallel()
	in, s := inspected(t, legacyfixture.Options{Variant: legacyfixture.TLS, Auth: true, Formed: true}, translate.Config{})
	b, err := json.Marshal(translate.Translate(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range s.Secrets {
		if key := sec.Data["tls.key"]; len(key) > 0 && strings.Contains(string(b), strings.TrimSpace(string(key))) {
			t.Errorf("the result carries the private key of %s", sec.Name)
		}
		if strings.Contains(string(b), "PRIVATE KEY") || strings.Contains(string(b), "BEGIN CERTIFICATE") {
			t.Fatal("the result carries PEM material")
		}
	}
	sum := translate.Summarize(s.Secrets[1])
	if sum.CA != nil || len(sum.CertDNSNames) == 0 || !cmp.Equal(sum.Keys, []string{"tls.crt", "tls.key"}) {
		t.Errorf("summary = %+v", sum)
	}
}

func TestSplitImage(t *testing.T) {
	t.Parallel()
	for image, want := range map[string][2]string{
		"quay.io/coreos/etcd:v3.5.12":                  {"quay.io/coreos/etcd", "v3.5.12"},
		"registry.local:5000/etcd:v3.6.1":              {"registry.local:5000/etcd", "v3.6.1"},
		"registry.local:5000/etcd":                     {"registry.local:5000/etcd", ""},
		"etcd@sha256:0123":                             {"etcd", ""},
		"gcr.io/etcd-development/etcd:v3.5.9@sha256:1": {"gcr.io/etcd-development/etcd", "v3.5.9"},
		"": {"", ""},
	} {
		repo, tag := translate.SplitImage(image)
		if repo != want[0] || tag != want[1] {
			t.Errorf("SplitImage(%q) = %q, %q; want %q, %q", image, repo, tag, want[0], want[1])
		}
	}
}
