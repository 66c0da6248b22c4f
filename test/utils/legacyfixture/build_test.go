package legacyfixture

import (
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

func build(tb testing.TB, o Options) *Set {
	tb.Helper()
	s, err := Build(o)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// The expected command lines are spelled out literally from the legacy layout
// (docs/migration.md, "Legacy layout") rather than computed, so that a change to the renderer
// shows here.
func TestStatefulSetFlagsPerVariant(t *testing.T) {
	t.Parallel()
	common := []string{
		"--name=$(POD_NAME)",
		"--listen-metrics-urls=http://0.0.0.0:2381",
		"--listen-peer-urls=https://0.0.0.0:2380",
	}
	for name, tc := range map[string]struct {
		opts Options
		want []string
	}{
		"plaintext": {
			opts: Options{Name: "etcd", Namespace: "tenant-a"},
			want: append(append([]string{}, common...),
				"--listen-client-urls=http://0.0.0.0:2379",
				"--initial-advertise-peer-urls=https://$(POD_NAME).etcd-headless.$(POD_NAMESPACE).svc:2380",
				"--data-dir=/var/run/etcd/default.etcd",
				"--advertise-client-urls=http://$(POD_NAME).etcd-headless.$(POD_NAMESPACE).svc:2379",
				"--peer-auto-tls",
				"--auto-compaction-retention=5m", "--snapshot-count=10000",
				"--quota-backend-bytes=4080218931"),
		},
		"peer auto-TLS with server TLS, custom headless name, options": {
			opts: Options{Name: "db", Namespace: "ns", Variant: PeerAutoTLS, HeadlessServiceName: "db-peers",
				StorageSize: resource.MustParse("1Gi"), Options: map[string]string{"enable-v2": "false", "debug": "", "auto-compaction-retention": "1h"}},
			want: append(append([]string{}, common...),
				"--listen-client-urls=https://0.0.0.0:2379",
				"--initial-advertise-peer-urls=https://$(POD_NAME).db-peers.$(POD_NAMESPACE).svc:2380",
				"--data-dir=/var/run/etcd/default.etcd",
				"--advertise-client-urls=https://$(POD_NAME).db-peers.$(POD_NAMESPACE).svc:2379",
				"--peer-auto-tls",
				"--cert-file=/etc/etcd/pki/server/cert/tls.crt", "--key-file=/etc/etcd/pki/server/cert/tls.key",
				"--auto-compaction-retention=5m", "--snapshot-count=10000",
				"--auto-compaction-retention=1h", "--debug", "--enable-v2=false", "--quota-backend-bytes=1020054732"),
		},
		"six-Secret TLS, explicit quota": {
			opts: Options{Name: "etcd", Namespace: "tenant-a", Variant: TLS, Auth: true, Options: map[string]string{"quota-backend-bytes": "2147483648"}},
			want: append(append([]string{}, common...),
				"--listen-client-urls=https://0.0.0.0:2379",
				"--initial-advertise-peer-urls=https://$(POD_NAME).etcd-headless.$(POD_NAMESPACE).svc:2380",
				"--data-dir=/var/run/etcd/default.etcd",
				"--advertise-client-urls=https://$(POD_NAME).etcd-headless.$(POD_NAMESPACE).svc:2379",
				"--peer-trusted-ca-file=/etc/etcd/pki/peer/ca/ca.crt",
				"--peer-cert-file=/etc/etcd/pki/peer/cert/tls.crt",
				"--peer-key-file=/etc/etcd/pki/peer/cert/tls.key",
				"--peer-client-cert-auth",
				"--cert-file=/etc/etcd/pki/server/cert/tls.crt", "--key-file=/etc/etcd/pki/server/cert/tls.key",
				"--trusted-ca-file=/etc/etcd/pki/client/ca/ca.crt", "--client-cert-auth",
				"--auto-compaction-retention=5m", "--snapshot-count=10000",
				"--quota-backend-bytes=2147483648"),
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := build(t, tc.opts)
			got := s.StatefulSet.Spec.Template.Spec.Containers[0]
			if diff := cmp.Diff(tc.want, got.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"etcd"}, got.Command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatefulSetLayout(t *testing.T) {
	t.Parallel()
	s := build(t, Options{Name: "etcd", Namespace: "tenant-a", Variant: TLS, StorageClass: "fast", StorageSize: resource.MustParse("10Gi")})
	sts := s.StatefulSet
	wantLabels := map[string]string{"app.kubernetes.io/name": "etcd", "app.kubernetes.io/instance": "etcd", "app.kubernetes.io/managed-by": "etcd-operator"}
	if sts.Name != "etcd" || sts.Spec.ServiceName != "etcd-headless" || sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("statefulset %s serviceName %s policy %s", sts.Name, sts.Spec.ServiceName, sts.Spec.PodManagementPolicy)
	}
	if diff := cmp.Diff(wantLabels, sts.Spec.Selector.MatchLabels); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantLabels, sts.Spec.Template.Labels); diff != "" {
		t.Errorf("pod labels (-want +got):\n%s", diff)
	}
	c := sts.Spec.Template.Spec.Containers[0]
	if c.Name != "etcd" || c.Image != "quay.io/coreos/etcd:v3.5.12" {
		t.Errorf("container %s image %s", c.Name, c.Image)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.ValueFrom.FieldRef.FieldPath
	}
	if diff := cmp.Diff(map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"}, env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].ConfigMapRef.Name != "etcd-cluster-state" {
		t.Errorf("envFrom = %+v", c.EnvFrom)
	}
	for probe, want := range map[*corev1.Probe]string{c.StartupProbe: "/readyz?serializable=false", c.ReadinessProbe: "/readyz", c.LivenessProbe: "/livez"} {
		if probe.HTTPGet.Path != want || probe.HTTPGet.Port != intstr.FromInt32(2381) {
			t.Errorf("probe %s on %v, want %s on 2381", probe.HTTPGet.Path, probe.HTTPGet.Port, want)
		}
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	wantMounts := map[string]string{"data": "/var/run/etcd", "peer-trusted-ca-certificate": "/etc/etcd/pki/peer/ca",
		"peer-certificate": "/etc/etcd/pki/peer/cert", "server-certificate": "/etc/etcd/pki/server/cert",
		"client-trusted-ca-certificate": "/etc/etcd/pki/client/ca"}
	if diff := cmp.Diff(wantMounts, mounts); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	secrets := map[string]string{}
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			secrets[v.Name] = v.Secret.SecretName
		}
	}
	wantSecrets := map[string]string{"peer-trusted-ca-certificate": "etcd-peer-ca", "peer-certificate": "etcd-peer-tls",
		"server-certificate": "etcd-server-tls", "client-trusted-ca-certificate": "etcd-client-ca"}
	if diff := cmp.Diff(wantSecrets, secrets); diff != "" {
		t.Errorf("secret volumes (-want +got):\n%s", diff)
	}
	vct := sts.Spec.VolumeClaimTemplates
	if len(vct) != 1 || vct[0].Name != "data" || *vct[0].Spec.StorageClassName != "fast" ||
		!vct[0].Spec.Resources.Requests.Storage().Equal(resource.MustParse("10Gi")) || vct[0].Spec.AccessModes[0] != corev1.ReadWriteOnce {
		t.Errorf("claim templates = %+v", vct)
	}
	if ref := sts.OwnerReferences; len(ref) != 1 || ref[0].Kind != "EtcdCluster" || ref[0].APIVersion != "etcd.aenix.io/v1alpha1" || !*ref[0].Controller {
		t.Errorf("ownerReferences = %+v", ref)
	}
}

func TestServicesConfigMapAndPDB(t *testing.T) {
	t.Parallel()
	s := build(t, Options{Name: "etcd", Namespace: "tenant-a", Replicas: 5, PDB: true, Formed: true})
	h := s.HeadlessService
	if h.Name != "etcd-headless" || h.Spec.ClusterIP != "None" || !h.Spec.PublishNotReadyAddresses {
		t.Errorf("headless = %s %s %v", h.Name, h.Spec.ClusterIP, h.Spec.PublishNotReadyAddresses)
	}
	ports := map[string]int32{}
	for _, p := range h.Spec.Ports {
		ports[p.Name] = p.Port
	}
	if diff := cmp.Diff(map[string]int32{"peer": 2380, "client": 2379}, ports); diff != "" {
		t.Errorf("headless ports (-want +got):\n%s", diff)
	}
	cs := s.ClientService
	if cs.Name != "etcd" || cs.Spec.Type != corev1.ServiceTypeClusterIP || len(cs.Spec.Ports) != 1 || cs.Spec.Ports[0].Name != "client" || cs.Spec.Ports[0].Port != 2379 {
		t.Errorf("client service = %s %s %+v", cs.Name, cs.Spec.Type, cs.Spec.Ports)
	}
	wantCM := map[string]string{ //nolint:gosec // G101: the legacy cluster token is a public name, not a credential
		"ETCD_INITIAL_CLUSTER_STATE": "existing",
		"ETCD_INITIAL_CLUSTER_TOKEN": "etcd-tenant-a",
		"ETCD_INITIAL_CLUSTER": "etcd-0=https://etcd-0.etcd-headless.tenant-a.svc:2380,etcd-1=https://etcd-1.etcd-headless.tenant-a.svc:2380," +
			"etcd-2=https://etcd-2.etcd-headless.tenant-a.svc:2380,etcd-3=https://etcd-3.etcd-headless.tenant-a.svc:2380," +
			"etcd-4=https://etcd-4.etcd-headless.tenant-a.svc:2380",
	}
	if s.StateConfigMap.Name != "etcd-cluster-state" {
		t.Errorf("configmap name %s", s.StateConfigMap.Name)
	}
	if diff := cmp.Diff(wantCM, s.StateConfigMap.Data); diff != "" {
		t.Errorf("configmap (-want +got):\n%s", diff)
	}
	if s.PDB == nil || s.PDB.Name != "etcd" || s.PDB.Spec.MinAvailable.IntValue() != 3 {
		t.Errorf("pdb = %+v", s.PDB)
	}
	if unformed := build(t, Options{}); unformed.StateConfigMap.Data["ETCD_INITIAL_CLUSTER_STATE"] != "new" || unformed.PDB != nil {
		t.Errorf("unformed cluster: state %q, pdb %v", unformed.StateConfigMap.Data["ETCD_INITIAL_CLUSTER_STATE"], unformed.PDB)
	}
}

func TestTLSSecretsChainToTheirCAs(t *testing.T) {
	t.Parallel()
	s := build(t, Options{Name: "etcd", Namespace: "tenant-a", Variant: TLS})
	byName := map[string]*corev1.Secret{}
	for _, sec := range s.Secrets {
		byName[sec.Name] = sec
	}
	tls := s.Cluster.TLS()
	for _, pair := range []struct{ cert, ca, role string }{
		{tls.PeerSecret, tls.PeerTrustedCASecret, CAPeer},
		{tls.ServerSecret, tls.ServerTrustedCASecret, CAServer},
		{tls.ClientSecret, tls.ClientTrustedCASecret, CAClient},
	} {
		cert, ca := byName[pair.cert], byName[pair.ca]
		if cert == nil || ca == nil {
			t.Fatalf("missing Secret %q or %q among %v", pair.cert, pair.ca, byName)
		}
		if _, ok := cert.Data["ca.crt"]; ok {
			t.Errorf("%s carries ca.crt without CAInCertSecrets", cert.Name)
		}
		if string(ca.Data["ca.crt"]) != string(s.CAs[pair.role]) {
			t.Errorf("%s ca.crt is not the %s CA", ca.Name, pair.role)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(ca.Data["ca.crt"])
		block, _ := pem.Decode(cert.Data["tls.crt"])
		leaf, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			t.Errorf("%s does not chain to %s: %v", cert.Name, ca.Name, err)
		}
	}
	if len(build(t, Options{Variant: PeerAutoTLS}).Secrets) != 2 || len(build(t, Options{}).Secrets) != 0 {
		t.Error("peer-auto-tls wants the server pair only, plaintext none")
	}
	withCA := build(t, Options{Variant: PeerAutoTLS, CAInCertSecrets: true})
	if _, ok := withCA.Secrets[1].Data["ca.crt"]; !ok {
		t.Error("CAInCertSecrets: server Secret has no ca.crt")
	}
}

func TestClusterDecodesAsLegacy(t *testing.T) {
	t.Parallel()
	s := build(t, Options{Name: "etcd", Namespace: "tenant-a", Variant: TLS, Auth: true, Image: "quay.io/coreos/etcd:v3.5.17"})
	u, err := legacy.ToUnstructured(s.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	c, err := legacy.DecodeCluster(u)
	if err != nil {
		t.Fatal(err)
	}
	if !c.AuthEnabled() || c.TLS().ClientSecret != "etcd-client-tls" || c.Spec.PodTemplate.Spec.Containers[0].Image != "quay.io/coreos/etcd:v3.5.17" {
		t.Errorf("decoded %+v", c.Spec)
	}
	if img := s.StatefulSet.Spec.Template.Spec.Containers[0].Image; img != "quay.io/coreos/etcd:v3.5.17" {
		t.Errorf("statefulset image %s", img)
	}
}

func TestCRDsAreStructural(t *testing.T) {
	t.Parallel()
	for _, crd := range CRDs() {
		if crd.Spec.Group != "etcd.aenix.io" || crd.Spec.Versions[0].Name != "v1alpha1" || crd.Name != crd.Spec.Names.Plural+".etcd.aenix.io" {
			t.Errorf("crd %s: group %s version %s", crd.Name, crd.Spec.Group, crd.Spec.Versions[0].Name)
		}
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
			t.Fatal(err)
		}
		ss, err := structuralschema.NewStructural(internal)
		if err != nil {
			t.Fatalf("%s: %v", crd.Name, err)
		}
		if errs := structuralschema.ValidateStructural(field.NewPath("schema"), ss); len(errs) > 0 {
			t.Errorf("%s is not structural: %v", crd.Name, errs)
		}
	}
}

func TestExpectedPodsAndPVCs(t *testing.T) {
	t.Parallel()
	s := build(t, Options{Name: "etcd", Namespace: "tenant-a", Replicas: 3})
	pods, pvcs := s.ExpectedPods(), s.ExpectedPVCs()
	if len(pods) != 3 || len(pvcs) != 3 {
		t.Fatalf("%d pods, %d pvcs", len(pods), len(pvcs))
	}
	for i, p := range pods {
		name := legacy.PodName("etcd", i)
		if p.Name != name || p.Spec.Hostname != name || p.Spec.Subdomain != "etcd-headless" || p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %d = %s host %s sub %s %s", i, p.Name, p.Spec.Hostname, p.Spec.Subdomain, p.Status.Phase)
		}
		if claim := p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName; claim != "data-"+name || pvcs[i].Name != claim {
			t.Errorf("pod %s claim %s, pvc %s", name, claim, pvcs[i].Name)
		}
	}
	if s.StatefulSet.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data" {
		t.Error("ExpectedPods changed the StatefulSet's template")
	}
	if build(t, Options{EmptyDir: true}).ExpectedPVCs() != nil {
		t.Error("emptyDir cluster has PVCs")
	}
}

func TestControllerStandIn(t *testing.T) {
	t.Parallel()
	d := ControllerDeployment("quay.io/coreos/etcd:v3.5.35", 0)
	if d.Namespace != "etcd-operator-system" || d.Name != "etcd-operator-controller-manager" || *d.Spec.Replicas != 0 {
		t.Errorf("deployment %s/%s replicas %d", d.Namespace, d.Name, *d.Spec.Replicas)
	}
}

func TestBuildRejectsUnknownVariant(t *testing.T) {
	t.Parallel()
	if _, err := Build(Options{Variant: "mtls"}); err == nil {
		t.Error("built an unknown variant")
	}
}

// TestReissuedNamesBothLayouts: the re-issued certificates chain to the same CAs and name both
// the legacy members (adopted members keep their peer URLs) and this operator's (members added
// later), the SANs the operator's own check wants.
func TestReissuedNamesBothLayouts(t *testing.T) {
	t.Parallel()
	s := build(t, Options{Name: "etcd", Namespace: "tenant-a", Variant: TLS})
	got, err := s.Reissued()
	if err != nil {
		t.Fatal(err)
	}
	for role, names := range map[string][]string{
		CAServer: {"etcd-0.etcd-headless.tenant-a.svc", "etcd-x1.etcd.tenant-a.svc", "etcd-client.tenant-a.svc.cluster.local", "etcd.tenant-a.svc", "localhost"},
		CAPeer:   {"etcd-0.etcd-headless.tenant-a.svc.cluster.local", "peer.etcd.tenant-a.svc", "etcd-x1.etcd.tenant-a.svc.cluster.local"},
	} {
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(s.CAs[role])
		block, _ := pem.Decode(got[role][corev1.TLSCertKey])
		if block == nil {
			t.Fatalf("%s: no re-issued certificate in %v", role, got)
		}
		leaf, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: n, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
				t.Errorf("re-issued %s certificate for %s: %v", role, n, err)
			}
		}
	}
	if auto, err := build(t, Options{Variant: PeerAutoTLS}).Reissued(); err != nil || len(auto) != 1 || auto[CAServer] == nil {
		t.Errorf("peer auto-TLS re-issues the server certificate alone: %v, %v", auto, err)
	}
}
