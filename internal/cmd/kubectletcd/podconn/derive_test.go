package podconn

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// operatorPod is the Pod this operator renders for member demo-a of cluster demo in tenant
// (desired.Pod), with tls applied to the member and guarded when guard is set.
func operatorPod(t *testing.T, tls *etcdv1alpha2.EtcdMemberTLS, guard bool) *corev1.Pod {
	t.Helper()
	m := &etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-a", Namespace: "tenant", UID: "m-uid"},
		Spec: etcdv1alpha2.EtcdMemberSpec{
			ClusterName: "demo", Version: "3.6.5", InitialCluster: "demo-a=http://demo-a.demo.tenant.svc:2380",
			ClusterToken: "tok", Replicas: 1, TLS: tls,
			Storage: etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("4Gi"))},
		},
		Status: etcdv1alpha2.EtcdMemberStatus{IsVoter: true},
	}
	in := desired.Inputs{State: desired.ClusterStateNew}
	if guard {
		in.GuardImage = "example.com/etcd-operator:v1"
	}
	return desired.Pod(m, in)
}

// legacyPod is pod 1 of a formed legacy cluster of variant v (test/utils/legacyfixture).
func legacyPod(t *testing.T, o legacyfixture.Options) *corev1.Pod {
	t.Helper()
	o.Name, o.Namespace, o.Formed = "old", "tenant", true
	s, err := legacyfixture.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	return s.ExpectedPods()[1]
}

// serverSecret names the server certificate Secret of operatorPod's TLS cases.
const serverSecret = "demo-server-tls" //nolint:gosec // G101: a Secret's name, not its content

func serverFile(key string) *SecretFile { return &SecretFile{Secret: serverSecret, Key: key} }

func TestDerive(t *testing.T) {
	server := &corev1.LocalObjectReference{Name: serverSecret}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want Target
	}{{
		name: "operator plaintext, guarded",
		pod:  operatorPod(t, nil, true),
		want: Target{Namespace: "tenant", Pod: "demo-a", Container: "etcd", Member: "demo-a", Scheme: "http", Port: 2379, ServerName: "demo-a.demo.tenant.svc", QuotaBackendBytes: operatorQuota()},
	}, {
		name: "operator server TLS, unguarded",
		pod:  operatorPod(t, &etcdv1alpha2.EtcdMemberTLS{ClientServerSecretRef: server}, false),
		want: Target{Namespace: "tenant", Pod: "demo-a", Container: "etcd", Member: "demo-a", Scheme: "https", Port: 2379, ServerName: "demo-a.demo.tenant.svc",
			ServerCert: serverFile("tls.crt"), QuotaBackendBytes: operatorQuota()},
	}, {
		name: "operator mTLS, guarded",
		pod:  operatorPod(t, &etcdv1alpha2.EtcdMemberTLS{ClientServerSecretRef: server, ClientMTLS: true, PeerAutoTLS: true}, true),
		want: Target{Namespace: "tenant", Pod: "demo-a", Container: "etcd", Member: "demo-a", Scheme: "https", Port: 2379, ServerName: "demo-a.demo.tenant.svc",
			ServerCert: serverFile("tls.crt"), ClientCertAuth: true,
			ClientCA: serverFile("ca.crt"), QuotaBackendBytes: operatorQuota()},
	}, {
		name: "legacy plaintext",
		pod:  legacyPod(t, legacyfixture.Options{Variant: legacyfixture.Plaintext}),
		want: Target{Namespace: "tenant", Pod: "old-1", Container: "etcd", Member: "old-1", Scheme: "http", Port: 2379, ServerName: "old-1.old-headless.tenant.svc",
			QuotaBackendBytes: legacyQuota()},
	}, {
		name: "legacy server TLS, peer auto-TLS",
		pod:  legacyPod(t, legacyfixture.Options{Variant: legacyfixture.PeerAutoTLS}),
		want: Target{Namespace: "tenant", Pod: "old-1", Container: "etcd", Member: "old-1", Scheme: "https", Port: 2379, ServerName: "old-1.old-headless.tenant.svc",
			ServerCert: &SecretFile{Secret: "old-server-tls", Key: "tls.crt"}, QuotaBackendBytes: legacyQuota()}, //nolint:gosec // G101: a Secret name, not its content
	}, {
		name: "legacy full TLS with client auth and etcd auth, renamed headless Service",
		pod:  legacyPod(t, legacyfixture.Options{Variant: legacyfixture.TLS, Auth: true, HeadlessServiceName: "peers", Options: map[string]string{"quota-backend-bytes": "1000000"}}),
		want: Target{Namespace: "tenant", Pod: "old-1", Container: "etcd", Member: "old-1", Scheme: "https", Port: 2379, ServerName: "old-1.peers.tenant.svc",
			ServerCert: &SecretFile{Secret: "old-server-tls", Key: "tls.crt"}, ClientCertAuth: true, //nolint:gosec // G101: a Secret name, not its content
			ClientCA: &SecretFile{Secret: "old-client-ca", Key: "ca.crt"}, QuotaBackendBytes: 1000000},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Derive(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Derive (-want +got):\n%s", d)
			}
		})
	}
}

// legacyQuota is the legacy operator's implicit quota on its default volume.
func legacyQuota() int64 { return legacy.DefaultQuotaBackendBytes(legacy.DefaultStorageSize) }

// operatorQuota is this operator's quota flag on operatorPod's 4Gi volume.
func operatorQuota() int64 {
	return desired.QuotaBackendBytes(nil, resource.MustParse("4Gi"))
}

// TestDeriveShapes covers command lines and volume layouts neither operator renders but a
// hand-made etcd Pod may have.
func TestDeriveShapes(t *testing.T) {
	pod := func(c corev1.Container, vols ...corev1.Volume) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "e-0", Namespace: "ns"},
			Spec: corev1.PodSpec{Hostname: "e-0", Subdomain: "e", Containers: []corev1.Container{{Name: "sidecar", Command: []string{"sleep"}}, c}, Volumes: vols}}
	}
	secretVol := func(name, secret string, items ...corev1.KeyToPath) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret, Items: items}}}
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want Target
		err  string
	}{{
		name: "defaults: etcd's own listener, name from hostname",
		pod:  pod(corev1.Container{Name: "db", Command: []string{"/usr/local/bin/etcd"}}),
		want: Target{Namespace: "ns", Pod: "e-0", Container: "db", Scheme: "http", Port: 2379, ServerName: "e-0.e.ns.svc"},
	}, {
		name: "flags from ETCD_ variables, an IP advertised, items and subPath",
		pod: pod(corev1.Container{Name: "db", Command: []string{"etcd"}, Env: []corev1.EnvVar{
			{Name: "ETCD_LISTEN_CLIENT_URLS", Value: "https://0.0.0.0:32379"},
			{Name: "ETCD_ADVERTISE_CLIENT_URLS", Value: "https://10.0.0.7:32379"},
			{Name: "ETCD_CERT_FILE", Value: "/certs/server.pem"},
			{Name: "ETCD_CLIENT_CERT_AUTH", Value: "true"},
			{Name: "ETCD_TRUSTED_CA_FILE", Value: "/ca/ca.pem"},
		}, VolumeMounts: []corev1.VolumeMount{
			{Name: "certs", MountPath: "/certs"},
			{Name: "ca", MountPath: "/ca/ca.pem", SubPath: "ca.pem"},
		}}, secretVol("certs", "srv", corev1.KeyToPath{Key: "tls.crt", Path: "server.pem"}), secretVol("ca", "cas")),
		want: Target{Namespace: "ns", Pod: "e-0", Container: "db", Scheme: "https", Port: 32379, ServerName: "e-0.e.ns.svc",
			ServerCert: &SecretFile{Secret: "srv", Key: "tls.crt"}, ClientCertAuth: true, ClientCA: &SecretFile{Secret: "cas", Key: "ca.pem"}},
	}, {
		name: "no etcd",
		pod:  pod(corev1.Container{Name: "db", Command: []string{"postgres"}}),
		err:  "no container of the Pod runs etcd",
	}, {
		name: "certificate on an emptyDir",
		pod: pod(corev1.Container{Name: "db", Command: []string{"etcd"}, Args: []string{"--listen-client-urls=https://0.0.0.0:2379", "--cert-file=/tls/tls.crt"},
			VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/tls"}}}, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}),
		err: "not a Secret volume",
	}, {
		name: "unix listener",
		pod:  pod(corev1.Container{Name: "db", Command: []string{"etcd"}, Args: []string{"--listen-client-urls=unix://sock"}}),
		err:  "not an http or https URL",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Derive(tc.pod)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Derive: want an error containing %q, got %v (%+v)", tc.err, err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Derive (-want +got):\n%s", d)
			}
		})
	}
	if _, err := Derive(pod(corev1.Container{Name: "db", Command: []string{"true"}})); !errors.Is(err, ErrNoEtcd) {
		t.Errorf("a Pod without etcd: want ErrNoEtcd, got %v", err)
	}
}
