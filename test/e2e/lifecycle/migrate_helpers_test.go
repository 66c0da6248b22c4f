//go:build e2e

package lifecycle

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/tlsverify"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
	"github.com/etcd-operator/etcd-operator/test/utils/traffic"
)

// What the migration scenarios (migrate_test.go, docs/e2e-lifecycle.md, "Migration from the
// legacy operator") share: a legacy cluster the nodes really run, the write traffic of a client
// in a Pod through the client Service's DNS name, and what must not change across the adoption.

const (
	// legacyName is the legacy EtcdCluster's name, and so the adopted cluster's.
	legacyName = "etcd"
	// migrateTimeout bounds one etcd-migrate run: the apply waits for the StatefulSet's
	// orphaning (≤ 2 min) and the Service cut-over (≤ 1 min) at most.
	migrateTimeout = 6 * time.Minute
	// migrateMinAcked is how many acknowledged puts a migration's traffic must reach.
	migrateMinAcked = 100
	// migrateStorageClass is the local cluster's pool of 1Gi volumes (docs/local-cluster.md,
	// "Storage"): the default pool can be used up by a full e2e run until the next cluster-up
	// recycles it, and a migration needs up to 6 volumes (3 members, 2 more while scaled to 5,
	// a backup claim).
	migrateStorageClass = "local-expandable"
)

// memberState is what the adoption must keep: etcd's cluster ID and member IDs by name, and
// every member Pod's UID and restart count.
type memberState struct {
	clusterID string
	members   map[string]string
	pods      map[string]adoptedPod
}

type adoptedPod struct {
	uid      types.UID
	restarts int32
}

// legacyRun is one legacy cluster through its migration.
type legacyRun struct {
	set *legacyfixture.Set
	// controller is the legacy controller stand-in's namespace/name (--legacy-controller).
	controller string
	// access dials the members by Pod IP (nil for plaintext clients).
	access *tls.Config
	writer *framework.ClientPod
	// backupClaim, when set, is the PVC of the mandatory backup; otherwise --skip-backup.
	backupClaim string
	before      memberState
}

// startLegacy applies the legacy fixture of variant with 3 members on an etcd image the nodes
// have, waits until every member is Ready (its readiness probe is etcd's /readyz), starts the
// legacy controller stand-in with one replica, and records what the adoption must keep.
func startLegacy(f *framework.Test, variant legacyfixture.Variant, auth bool) *legacyRun {
	f.T.Helper()
	img, err := f.EtcdImage(f.Ctx, os.Getenv, etcdVersion())
	if err != nil {
		f.T.Fatal(err)
	}
	set, err := legacyfixture.Build(legacyfixture.Options{Name: legacyName, Namespace: f.Namespace, Image: img,
		Variant: variant, Auth: auth, StorageClass: migrateStorageClass, StorageSize: resource.MustParse("1Gi")})
	if err != nil {
		f.T.Fatal(err)
	}
	c, err := f.NewClient(apiextensionsv1.AddToScheme)
	if err != nil {
		f.T.Fatal(err)
	}
	start := time.Now()
	if err := set.Apply(f.Ctx, c); err != nil {
		f.T.Fatal(err)
	}
	r := &legacyRun{set: set, controller: f.Namespace + "/" + legacyfixture.ControllerName, access: legacyAccess(f, set)}
	if r.access != nil {
		clusterAccess.Store(f.Namespace+"/"+legacyName, r.access)
	}
	if _, err := f.WaitForPodsReady(f.Ctx, f.Namespace, legacySelector(), 3, bootstrapTimeout); err != nil {
		f.T.Fatal(err)
	}
	f.Record("migrate-legacy-bootstrap", since(start), "legacy fixture applied → 3 StatefulSet Pods Ready ("+string(variant)+")")
	if auth {
		r.enableAuth(f)
	}
	standIn := legacyfixture.ControllerDeployment(img, 1)
	standIn.Namespace = f.Namespace
	if err := c.Create(f.Ctx, standIn); err != nil {
		f.T.Fatal(err)
	}
	if err := f.WaitForDeploymentAvailable(f.Ctx, f.Namespace, standIn.Name, 2*time.Minute); err != nil {
		f.T.Fatal(err)
	}
	r.before = r.legacyState(f)
	f.T.Logf("legacy cluster %s: cluster ID %s, members %v", legacyName, r.before.clusterID, r.before.members)
	return r
}

// enableAuth turns etcd auth on as the legacy operator does once its cluster formed (the
// fixture cannot: package legacyfixture): a root user without a password, which the legacy
// client certificate (common name root) authenticates as, the root role, auth on.
func (r *legacyRun) enableAuth(f *framework.Test) {
	f.T.Helper()
	cli, _ := f.DialMembers(legacySelector(), r.access)
	ctx, cancel := context.WithTimeout(f.Ctx, time.Minute)
	defer cancel()
	if _, err := cli.RoleAdd(ctx, "root"); err != nil && !strings.Contains(err.Error(), "already exists") {
		f.T.Fatalf("adding role root: %v", err)
	}
	if _, err := cli.UserAddWithOptions(ctx, "root", "", &clientv3.UserAddOptions{NoPassword: true}); err != nil {
		f.T.Fatalf("adding user root: %v", err)
	}
	if _, err := cli.UserGrantRole(ctx, "root", "root"); err != nil {
		f.T.Fatalf("granting root to root: %v", err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		f.T.Fatalf("enabling auth: %v", err)
	}
}

// legacyAccess is how the test's clients reach a legacy cluster's members: plaintext, or the
// server CA with a name the legacy server certificate lists (the client Service's), and under
// client certificate authentication the legacy client certificate (common name root, which
// etcd maps to root once auth is on).
func legacyAccess(f *framework.Test, set *legacyfixture.Set) *tls.Config {
	ca, ok := set.CAs[legacyfixture.CAServer]
	if !ok {
		return nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		f.T.Fatal("legacy fixture: server CA does not parse")
	}
	t := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	// gRPC replaces ServerName with the dialled authority (a Pod IP, or the Service's fully
	// qualified name, which the legacy certificate does not list): docs/tls.md, "How the
	// operator connects".
	tlsverify.As(t, legacyName+"."+f.Namespace+".svc")
	if _, ok := set.CAs[legacyfixture.CAClient]; !ok {
		return t
	}
	for _, s := range set.Secrets {
		if s.Name != set.Cluster.Spec.Security.TLS.ClientSecret {
			continue
		}
		pair, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
		if err != nil {
			f.T.Fatalf("legacy client certificate %s: %v", s.Name, err)
		}
		t.Certificates = []tls.Certificate{pair}
	}
	if len(t.Certificates) == 0 {
		f.T.Fatal("legacy fixture: client certificate authentication without a client Secret")
	}
	return t
}

func legacySelector() string { return labels.SelectorFromSet(legacy.Selector(legacyName)).String() }

// legacyState reads etcd's member list through the members' Pod IPs and the member Pods.
func (r *legacyRun) legacyState(f *framework.Test) memberState {
	f.T.Helper()
	// The legacy Pods carry the legacy labels only, not the ones memberList selects.
	eps, err := f.MemberEndpoints(f.Ctx, f.Namespace, legacySelector(), r.access != nil)
	if err != nil {
		f.T.Fatal(err)
	}
	ml, err := memberListWith(f.Ctx, eps[0], r.access)
	if err != nil {
		f.T.Fatalf("MemberList at %s: %v", eps[0], err)
	}
	s := memberState{clusterID: hexID(ml.Header.ClusterId), members: map[string]string{}, pods: podStates(f, legacySelector())}
	for _, m := range ml.Members {
		s.members[m.Name] = hexID(m.ID)
	}
	if len(s.members) != 3 || len(s.pods) != 3 {
		f.T.Fatalf("legacy cluster: members %v, Pods %v; want 3 of each", s.members, s.pods)
	}
	return s
}

// podStates are the member Pods' UIDs and etcd restart counts, by Pod name, of the Pods that
// selector selects.
func podStates(f *framework.Test, selector string) map[string]adoptedPod {
	f.T.Helper()
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		f.T.Fatal(err)
	}
	out := map[string]adoptedPod{}
	for _, p := range pods.Items {
		st := adoptedPod{uid: p.UID}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == legacy.ContainerName {
				st.restarts = cs.RestartCount
			}
		}
		out[p.Name] = st
	}
	return out
}

// runMigrate runs etcd-migrate with args, bounded by migrateTimeout.
func runMigrate(f *framework.Test, args ...string) framework.PluginResult {
	f.T.Helper()
	ctx, cancel := context.WithTimeout(f.Ctx, migrateTimeout)
	defer cancel()
	return f.EtcdMigrate(ctx, args...)
}

// podLoad is write traffic from a client Pod through the client Service's DNS name.
type podLoad struct {
	gen    *traffic.Generator
	cancel context.CancelFunc
	done   chan struct{}
	res    *traffic.Result
	err    error
}

// startPodLoad starts traffic from the writer Pod to the Service svc under keys of its own
// and waits for its first 50 acknowledged writes.
func (r *legacyRun) startPodLoad(f *framework.Test, svc, keyPrefix string) *podLoad {
	f.T.Helper()
	scheme := "http"
	if r.access != nil {
		scheme = "https"
	}
	endpoint := scheme + "://" + framework.ServiceName(svc, f.Namespace) + ":2379"
	access := r.access
	l := &podLoad{done: make(chan struct{})}
	l.gen = traffic.New(traffic.Config{
		NewClient: func(ctx context.Context) (*clientv3.Client, error) {
			var t *tls.Config
			if access != nil {
				t = access.Clone()
			}
			return r.writer.EtcdClient(ctx, []string{endpoint}, t)
		},
		KeyPrefix: keyPrefix, Rate: trafficRate, MaxRequests: 1_000_000, MaxDuration: 30 * time.Minute,
	})
	ctx, cancel := context.WithCancel(f.Ctx)
	l.cancel = cancel
	go func() {
		defer close(l.done)
		l.res, l.err = l.gen.Run(ctx)
	}()
	f.T.Cleanup(func() { cancel(); <-l.done })
	waitAcked(f, l.gen, 50)
	return l
}

// stop waits for 50 more acknowledged writes, stops the traffic and checks it
// (framework.VerifyTraffic: linearizable, every acknowledged write read back, enough of them);
// it returns the result for the caller's own figures.
func (l *podLoad) stop(f *framework.Test, note string) *traffic.Result {
	f.T.Helper()
	waitAcked(f, l.gen, l.gen.Stats().AckedPuts+50)
	l.cancel()
	<-l.done
	if l.err != nil {
		f.T.Fatalf("traffic: %v", l.err)
	}
	f.VerifyTraffic(l.res, migrateMinAcked, note)
	return l.res
}

// migrateWrites are the API writes etcd-migrate made in [from, to), read from the API server's
// audit log: requests under the test's own user whose user agent is etcd-migrate's, to the
// test namespace or cluster-scoped, port-forwards excluded (a port-forward is a create on
// pods/portforward that writes nothing). The test then writes a marker ConfigMap and reads until
// the log holds it: the log is written in order, so every request of the run is in it by then.
func migrateWrites(f *framework.Test, from, to time.Time) []framework.AuditEvent {
	f.T.Helper()
	files, err := f.RequireClusterRecords().AuditLogFiles()
	if err != nil {
		f.T.Fatal(err)
	}
	user := selfUsername(f)
	// Named in full: the audit log names the object a create wrote only when the request does.
	marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("audit-marker-%d", time.Now().UnixNano()), Namespace: f.Namespace}}
	if marker, err = f.Kube.CoreV1().ConfigMaps(f.Namespace).Create(f.Ctx, marker, metav1.CreateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	var out []framework.AuditEvent
	err = f.Poll("the audit log to hold the marker "+marker.Name, time.Minute, func(context.Context) (bool, string, error) {
		events, err := framework.ReadAuditEvents(files, from, time.Now().Add(time.Second), user)
		if err != nil {
			return false, "", err
		}
		out = out[:0]
		seen := false
		for _, e := range events {
			if e.ObjectRef != nil && e.ObjectRef.Name == marker.Name && e.Verb == "create" {
				seen = true
			}
			if strings.HasPrefix(e.UserAgent, "etcd-migrate/") && isWriteVerb(e.Verb) && e.ObjectRef != nil &&
				e.ObjectRef.Subresource != "portforward" && (e.Namespace() == f.Namespace || e.Namespace() == "") &&
				e.RequestReceivedTimestamp.Before(to) {
				out = append(out, e)
			}
		}
		return seen, fmt.Sprintf("%d audit events of %s since %s", len(events), user, from.Format(time.RFC3339)), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	return out
}

func isWriteVerb(v string) bool {
	return slices.Contains([]string{"create", "update", "patch", "delete", "deletecollection"}, v)
}

// selfUsername is the user the test's kubeconfig authenticates as, which etcd-migrate shares.
func selfUsername(f *framework.Test) string {
	f.T.Helper()
	rev, err := f.Kube.AuthenticationV1().SelfSubjectReviews().Create(f.Ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	return rev.Status.UserInfo.Username
}

func describeAll(events []framework.AuditEvent) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		out = append(out, e.Describe())
	}
	return out
}

// requireKept checks what the adoption must keep: the same cluster ID and member IDs, and
// every member Pod with its UID and restart count.
func (r *legacyRun) requireKept(f *framework.Test, clusterID string, members map[string]string) {
	f.T.Helper()
	if clusterID != r.before.clusterID {
		f.T.Errorf("cluster ID %s after the adoption, was %s", clusterID, r.before.clusterID)
	}
	if !maps.Equal(members, r.before.members) {
		f.T.Errorf("members %v after the adoption, were %v", members, r.before.members)
	}
	after := podStates(f, podSelector(legacyName))
	if !maps.Equal(after, r.before.pods) {
		f.T.Errorf("member Pods (UID, restarts) %v after the adoption, were %v: a Pod was replaced or restarted", after, r.before.pods)
	}
}

// createMigrateClaim creates a 1Gi claim of migrateStorageClass.
func createMigrateClaim(f *framework.Test, name string) {
	f.T.Helper()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		StorageClassName: ptr.To(migrateStorageClass),
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := f.Kube.CoreV1().PersistentVolumeClaims(f.Namespace).Create(f.Ctx, pvc, metav1.CreateOptions{}); err != nil {
		f.T.Fatalf("creating PVC %s: %v", name, err)
	}
}
