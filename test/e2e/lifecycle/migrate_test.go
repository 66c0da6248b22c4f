//go:build e2e

package lifecycle

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// TestMigratePlaintextUnderWrites adopts a plaintext legacy cluster (3 StatefulSet Pods the
// nodes run) with the real etcd-migrate binary while a client in a Pod writes through the
// client Service's DNS name (docs/e2e-lifecycle.md, "Migration from the legacy operator"):
//   - with the legacy controller running, --apply is refused (exit 3) and writes nothing;
//   - once it is scaled to 0, the dry run exits 0 and writes nothing; the apply and
//     `etcd-migrate verify` exit 0;
//   - the adopted cluster converges with the same cluster ID and member IDs, HashKV equal, the
//     same Pods (UIDs) with unchanged restart counts, and the traffic is linearizable with every
//     acknowledged write read back; the longest write gap is recorded (target ≤ 5 s);
//   - the adopted cluster then scales 3→5→3, rolls a resources change one member at a time and
//     takes an EtcdSnapshot to a PVC, under traffic again.
func TestMigratePlaintextUnderWrites(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Migration, framework.Tools)
	requireOperator(f)
	r := startLegacy(f, legacyfixture.Plaintext, false)
	r.writer = f.StartClientPod("writer")
	load := r.startPodLoad(f, legacyName, "/migrate/")
	r.refuseWhileControllerRuns(f)
	r.stopController(f)
	r.migrate(f, load)
	r.operateAdopted(f)
}

// TestMigratePeerAutoTLSUnderWrites is the adoption of TestMigratePlaintextUnderWrites for a
// legacy cluster that serves clients over TLS (its own server certificate) and its peers with
// --peer-auto-tls, the layout the adopted cluster keeps as peer-auto-tls. The writer trusts the
// legacy server CA. This run takes the mandatory backup (to a PVC, through the snapshot agent's
// Job over the legacy client Service's TLS) instead of skipping it. The legacy server
// certificate names only the legacy Services, so the operator holds new members with
// CertificateInvalid until the runbook's re-issue (docs/migration.md, "Certificates after a TLS
// migration"); after it the adopted cluster scales, rolls and is snapshotted as the plaintext one.
func TestMigratePeerAutoTLSUnderWrites(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Migration, framework.Tools, framework.Security)
	r, ec := migrateTLSWithBackup(f, legacyfixture.PeerAutoTLS, false)
	if ec.Annotations[etcdv1alpha2.AnnotationPeerAutoTLS] != "true" {
		t.Errorf("adopted cluster annotations %v, want %s=true", ec.Annotations, etcdv1alpha2.AnnotationPeerAutoTLS)
	}
	r.reissueCertificates(f)
	r.operateAdopted(f)
}

// TestMigrateTLSAuthUnderWrites adopts a legacy cluster of the six-Secret TLS layout (peer
// mutual TLS, server TLS, client certificates under their own CA) with auth enabled, under
// traffic from a client in a Pod that presents the legacy client certificate (common name
// root). etcd-migrate turns auth off with that certificate before the adoption and the operator
// turns it on again with the generated root password (docs/migration.md, AuthWindow); the
// writer's certificate keeps working throughout. The mandatory backup is taken, with the legacy
// client certificate, inside the auth window. After the re-issue of the server and peer
// certificates the adopted cluster scales, rolls and is snapshotted as in the other variants.
func TestMigrateTLSAuthUnderWrites(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Migration, framework.Tools, framework.Security)
	r, ec := migrateTLSWithBackup(f, legacyfixture.TLS, true)
	if ec.Spec.Auth == nil || !ec.Spec.Auth.Enabled || ec.Spec.TLS == nil || ec.Spec.TLS.Peer == nil {
		t.Errorf("adopted cluster spec auth %+v, tls %+v: want auth on and peer TLS from the legacy peer Secret", ec.Spec.Auth, ec.Spec.TLS)
	}
	waitAuthLatched(f, legacyName)
	r.reissueCertificates(f)
	r.operateAdopted(f)
}

// migrateTLSWithBackup is the part both TLS variants share: the legacy cluster of variant
// under traffic from a client Pod, the legacy controller stopped, the adoption with the
// mandatory backup to a PVC, and the adopted cluster read back.
func migrateTLSWithBackup(f *framework.Test, variant legacyfixture.Variant, auth bool) (*legacyRun, *etcdv1alpha2.EtcdCluster) {
	f.T.Helper()
	requireOperator(f)
	r := startLegacy(f, variant, auth)
	r.backupClaim = "premigrate"
	r.writer = f.StartClientPod("writer")
	load := r.startPodLoad(f, legacyName, "/migrate/")
	r.stopController(f)
	r.migrate(f, load)
	ec, err := getCluster(f.Ctx, f, legacyName)
	if err != nil {
		f.T.Fatal(err)
	}
	return r, ec
}

// refuseWhileControllerRuns runs --apply while the stand-in legacy controller runs: the gate
// refuses with exit 3 before any write (docs/migration.md, "Gate").
func (r *legacyRun) refuseWhileControllerRuns(f *framework.Test) {
	f.T.Helper()
	from := time.Now()
	res := runMigrate(f, "--apply", "-y", "--skip-backup", "--legacy-controller", r.controller)
	if res.Code != invocation.ExitRefused || !strings.Contains(res.Stderr, "legacy controller") {
		f.T.Fatalf("etcd-migrate --apply with the legacy controller running: want exit %d naming it, got %s", invocation.ExitRefused, res)
	}
	if w := migrateWrites(f, from, time.Now()); len(w) > 0 {
		f.T.Errorf("the refused run wrote %d times: %v", len(w), describeAll(w))
	}
	if _, err := getCluster(f.Ctx, f, legacyName); !apierrors.IsNotFound(err) {
		f.T.Errorf("EtcdCluster %s after the refused run: %v, want NotFound", legacyName, err)
	}
	f.T.Logf("refused as expected: %s", strings.TrimSpace(res.Stderr))
}

// stopController scales the stand-in legacy controller to 0 and waits for its Pods to end, as
// the runbook's first step does (docs/migration.md).
func (r *legacyRun) stopController(f *framework.Test) {
	f.T.Helper()
	if _, err := f.ScaleDeployment(f.Ctx, f.Namespace, legacyfixture.ControllerName, 0); err != nil {
		f.T.Fatal(err)
	}
	if err := f.WaitForNoPods(f.Ctx, f.Namespace, "control-plane=controller-manager", 2*time.Minute); err != nil {
		f.T.Fatal(err)
	}
}

// migrate runs the dry run, the apply and verify under the traffic load, then checks the
// adopted cluster and the traffic.
func (r *legacyRun) migrate(f *framework.Test, load *podLoad) {
	f.T.Helper()
	r.dryRun(f)
	r.apply(f)
	r.checkAdopted(f, load)
}

// checkAdopted runs `etcd-migrate verify` and checks what the adoption must keep (cluster ID,
// member IDs, Pods, HashKV equal) and the traffic, whose longest write gap it records.
func (r *legacyRun) checkAdopted(f *framework.Test, load *podLoad) {
	f.T.Helper()
	res := runMigrate(f, "verify")
	f.Record("migrate-verify", res.Took, "etcd-migrate verify → exit 0")
	f.T.Logf("etcd-migrate verify took %s", res.Took)
	if res.Code != 0 || !strings.Contains(res.Stdout, "verified") {
		f.T.Fatalf("etcd-migrate verify: %s", res)
	}
	ec := waitConverged(f, legacyName, 3, 3*time.Minute)
	r.requireKept(f, ec.Status.ClusterID, checkMembership(f, ec, 3))
	cli, eps := dialVoters(f, legacyName)
	f.T.Logf("after the adoption: %s", f.RequireHashKVEqual(cli, eps, time.Minute))
	if ec.Annotations[etcdv1alpha2.AnnotationMigratedFrom] == "" {
		f.T.Errorf("adopted cluster annotations %v lack %s", ec.Annotations, etcdv1alpha2.AnnotationMigratedFrom)
	}
	tr := load.stop(f, "writes from a Pod through the client Service's DNS name during etcd-migrate --apply")
	f.Record("migrate-write-gap", tr.WriteGap.Length,
		fmt.Sprintf("longest client-visible write gap during the adoption, %d acknowledged puts (target ≤ 5 s)", tr.Counts.AckedPuts))
	f.T.Logf("longest write gap during the adoption: %s (%d acknowledged puts)", tr.WriteGap.Length, tr.Counts.AckedPuts)
}

// dryRun runs the plan: exit 0, the cluster in it, no API write.
func (r *legacyRun) dryRun(f *framework.Test) {
	f.T.Helper()
	from := time.Now()
	res := runMigrate(f, "--legacy-controller", r.controller)
	f.Record("migrate-dry-run", res.Took, "etcd-migrate plan of 1 legacy cluster of 3 members (inspection through port-forwards)")
	f.T.Logf("etcd-migrate dry run took %s", res.Took)
	if res.Code != 0 || !strings.Contains(res.Stdout, legacyName) {
		f.T.Fatalf("etcd-migrate dry run: %s", res)
	}
	if w := migrateWrites(f, from, time.Now()); len(w) > 0 {
		f.T.Errorf("the dry run wrote %d times: %v", len(w), describeAll(w))
	}
	f.T.Logf("dry-run plan:\n%s", res.Stdout)
}

// apply runs --apply -y with the backup to r.backupClaim or --skip-backup: exit 0, the cluster
// verified by the run itself, and writes in the audit log.
func (r *legacyRun) apply(f *framework.Test) {
	f.T.Helper()
	backup := []string{"--skip-backup"}
	if r.backupClaim != "" {
		createMigrateClaim(f, r.backupClaim)
		backup = []string{"--backup-pvc-claim", r.backupClaim, "--backup-pvc-subpath", "premigrate"}
	}
	from := time.Now()
	res := runMigrate(f, append([]string{"--legacy-controller", r.controller, "--apply", "-y"}, backup...)...)
	f.Record("migrate-apply", res.Took, "etcd-migrate --apply "+strings.Join(backup, " ")+" of 3 members under write traffic → exit 0")
	f.T.Logf("etcd-migrate --apply took %s", res.Took)
	if res.Code != 0 {
		f.T.Fatalf("etcd-migrate --apply: %s", res)
	}
	f.T.Logf("apply:\n%s\n%s", res.Stdout, res.Stderr)
	if !strings.Contains(res.Stdout, "verified") {
		f.T.Errorf("etcd-migrate --apply did not verify the adopted cluster itself:\n%s", res.Stdout)
	}
	if r.backupClaim != "" {
		r.requireBackup(f, res.Stderr)
	}
	writes := migrateWrites(f, from, time.Now())
	f.RecordCount("migrate-apply-writes", int64(len(writes)), "API writes of etcd-migrate --apply (port-forwards excluded)")
	if len(writes) == 0 {
		f.T.Error("the audit log shows no write of etcd-migrate --apply: the write filter is wrong, and the dry run's 0 proves nothing")
	}
}

// operateAdopted runs the operations of an ordinary cluster on the adopted one, under traffic
// through the Service the operator now manages: scale 3→5→3, a resources roll one member at a
// time, an EtcdSnapshot to a PVC.
func (r *legacyRun) operateAdopted(f *framework.Test) {
	f.T.Helper()
	load := r.startPodLoad(f, legacyName+"-client", "/adopted/")
	ec, err := getCluster(f.Ctx, f, legacyName)
	if err != nil {
		f.T.Fatal(err)
	}
	clusterID := ec.Status.ClusterID
	prev := 3
	for _, n := range []int{5, 3} {
		start := time.Now()
		setReplicas(f, legacyName, int32(n))
		ec = waitConverged(f, legacyName, n, 2*scaleTimeout)
		f.Record(fmt.Sprintf("migrate-scale-%d-%d", prev, n), since(start), "adopted cluster under write traffic; replicas patch → converged")
		f.T.Logf("scaled the adopted cluster %d→%d in %s", prev, n, since(start))
		checkMembership(f, ec, n)
		if ec.Status.ClusterID != clusterID {
			f.T.Errorf("cluster ID %s after scaling to %d, was %s", ec.Status.ClusterID, n, clusterID)
		}
		cli, eps := dialVoters(f, legacyName)
		f.RequireHashKVEqual(cli, eps, time.Minute)
		prev = n
	}
	before := checkMembership(f, ec, 3)
	start := time.Now()
	roll(f, legacyName, "migrate-roll-resources", "resources change on the adopted cluster", before, func(s *etcdv1alpha2.EtcdClusterSpec) {
		s.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("150m")}
	})
	f.T.Logf("rolled a resources change across the adopted cluster in %s", since(start))
	r.snapshotAdopted(f)
	load.stop(f, "writes from a Pod through <c>-client while the adopted cluster scaled, rolled and was snapshotted")
}

// snapshotAdopted takes an EtcdSnapshot of the adopted cluster to a PVC and checks the file.
func (r *legacyRun) snapshotAdopted(f *framework.Test) {
	f.T.Helper()
	volumes := f.RequireVolumes()
	createMigrateClaim(f, "backups")
	start := time.Now()
	snap := &etcdv1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "adopted-1", Namespace: f.Namespace},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: legacyName},
			Destination: etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "backups", SubPath: "e2e"}}}}
	if err := kc(f).Create(f.Ctx, snap); err != nil {
		f.T.Fatal(err)
	}
	snap = waitSnapshotFinal(f, snap.Name)
	f.Record("migrate-snapshot-pvc", since(start), "EtcdSnapshot of the adopted cluster created → Complete (Job, under traffic)")
	f.T.Logf("snapshot of the adopted cluster in %s", since(start))
	if snap.Status.Phase != etcdv1alpha2.SnapshotPhaseComplete {
		f.T.Fatalf("snapshot ended %s: %+v", snap.Status.Phase, meta.FindStatusCondition(snap.Status.Conditions, etcdv1alpha2.ConditionReady))
	}
	dir, err := volumes.PVCHostPath(f.Ctx, f.Namespace, "backups")
	if err != nil {
		f.T.Fatal(err)
	}
	requireArtifact(f, filepath.Join(dir, "e2e"), snap)
	requireLastSnapshot(f, legacyName, snap)
}

// backedUp is the backup phase's line on stderr: "backed up to URI (CHECKSUM, revision N)".
var backedUp = regexp.MustCompile(`backed up to (\S+) \(sha256:([0-9a-f]{64}), revision (\d+)\)`)

// requireBackup checks the pre-adoption backup on r.backupClaim: the file the run named holds
// the SHA-256 it printed.
func (r *legacyRun) requireBackup(f *framework.Test, stderr string) {
	f.T.Helper()
	m := backedUp.FindStringSubmatch(stderr)
	if m == nil {
		f.T.Fatalf("etcd-migrate --apply printed no backup line:\n%s", stderr)
	}
	dir, err := f.RequireVolumes().PVCHostPath(f.Ctx, f.Namespace, r.backupClaim)
	if err != nil {
		f.T.Fatal(err)
	}
	file := filepath.Join(dir, "premigrate", path.Base(m[1]))
	body, err := os.ReadFile(file)
	if err != nil {
		f.T.Fatalf("the backup %s on the claim: %v", m[1], err)
	}
	sum := sha256.Sum256(body)
	if got := hex.EncodeToString(sum[:]); got != m[2] {
		f.T.Errorf("backup %s: sha256 %s, the run printed %s", file, got, m[2])
	}
	f.RecordBytes("migrate-backup-size", int64(len(body)), "the pre-adoption backup of 3 members under traffic, on a PVC")
	f.T.Logf("backup %s: %d bytes, revision %s", m[1], len(body), m[3])
}
