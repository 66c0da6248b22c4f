//go:build e2e

package lifecycle

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/promserver"
)

// Scrape jobs of the monitoring test, named after what prometheus-operator would scrape.
const (
	operatorJob = "etcd-operator"
	membersJob  = "etcd-members"
)

// TestMonitoringHeal runs a real Prometheus (built from the pinned module) on the host, scraping
// the operator's /metrics (honor_labels, as the chart's ServiceMonitor) and every member's
// metrics port 2381 with the namespace, cluster and pod labels the chart's PodMonitor gives,
// and evaluating config/prometheus/rules.yaml (docs/monitoring.md, "The e2e Prometheus"). On a
// 3-member Memory cluster with 200 keys and one snapshot to S3 it checks the per-cluster series against
// the cluster's real state: voters and learners against etcd's member list, ready members
// against the Ready voter Pods, the quorum margin, the leader against etcd's Status (the
// operator's has_leader and etcd's own is_leader of that Pod) and each member's database size
// against its Status. Then one follower's etcd is killed on every start until the operator
// replaces it (the crash loop of TestCrashLoopMemberReplaced): the quorum margin must drop to
// 0, the EtcdMemberDown and EtcdClusterQuorumAtRisk expressions must return that member and
// cluster (and Prometheus's EtcdMemberDown go pending), and after the heal the margin is 1
// again and the expressions return nothing for the cluster; once the cluster is deleted, the
// operator exports no series that names it. Every rule of the rule file must
// evaluate without error, and every dashboard panel's queries (its variables set to this
// cluster) must return data over the test. The key panels over the heal are drawn into
// monitoring-heal.png in the test's artifacts (and docs/images with E2E_UPDATE_DOCS_IMAGES=1).
// Records member-down-visible (first kill → the EtcdMemberDown expression returns the member)
// and monitoring-heal (first kill → converged).
func TestMonitoringHeal(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Tools)
	requireOperator(f)
	containers := f.RequireContainerFaults()
	const name = "prom"
	started := time.Now()
	p := startMonitoring(f)
	// Memory members and a snapshot to S3: what Prometheus sees does not depend on the medium,
	// and the test takes no volume from the cluster's shared pool (docs/local-cluster.md,
	// "Storage"). A killed etcd restarts with its tmpfs data, as a PVC member does.
	ec := newCluster(f, name, 3)
	ec.Spec.Storage.Medium = etcdv1alpha2.StorageMediumMemory
	createCluster(f, ec)
	waitConverged(f, name, 3, bootstrapTimeout)
	fillAndSnapshot(f, name)
	p.requireTargetsUp(f, name)
	p.requireClusterState(f, name)
	p.waitSteady(f, name)

	victim := pickMember(f, name, pickFollower)
	hist := watchHistory(f, name)
	killed := time.Now()
	kills := killOnEveryStart(f, containers, victim, crashLoopTimeout)
	waitReplaced(f, name, victim, crashLoopTimeout)
	healed := time.Now()
	hist.requireReplacedFor(f, victim, health.ReasonCrashLoop)
	f.Record("monitoring-heal", since(killed), fmt.Sprintf("etcd of a follower killed on every start (%d kills) → replaced, converged with 3 voters", kills))
	p.requireFaultSeen(f, name, victim, killed, healed)
	p.requireRecovered(f, name)
	p.waitSteady(f, name)
	p.requireRulesEvaluate(f)
	p.requireDashboardData(f, name, started)
	p.plotHeal(f, name, killed, healed)
	deleteCluster(f, name)
	p.requireSeriesGone(f, name)
}

// scrapeRun is the test's Prometheus and the rule file it evaluates.
type scrapeRun struct {
	srv   *promserver.Server
	rules ruleSet
}

// startMonitoring starts Prometheus with the rule file and keeps its targets on the operator's
// Pods and on the members of the test namespace.
func startMonitoring(f *framework.Test) *scrapeRun {
	f.T.Helper()
	rules := readRuleSet(f)
	srv := f.Prometheus([]promserver.Job{{Name: operatorJob, HonorLabels: true}, {Name: membersJob}}, rules.path)
	d, err := f.OperatorDeployment(f.Ctx)
	if err != nil {
		f.T.Fatal(err)
	}
	f.ScrapePods(srv, operatorJob, d.Namespace, metav1.FormatLabelSelector(d.Spec.Selector), "metrics", nil)
	f.ScrapePods(srv, membersJob, f.Namespace, etcdv1alpha2.LabelName+"="+etcdv1alpha2.NameEtcd, "metrics",
		map[string]string{"cluster": etcdv1alpha2.LabelCluster})
	f.T.Logf("prometheus at %s (log %s)", srv.URL, srv.LogPath)
	return &scrapeRun{srv: srv, rules: rules}
}

// fillAndSnapshot writes 200 keys and takes one snapshot to a real S3 server on the host, so
// that the database-size and snapshot panels have something to show.
func fillAndSnapshot(f *framework.Test, name string) {
	f.T.Helper()
	cli, _ := dialVoters(f, name)
	putKeys(f, cli, "/monitoring/", 200)
	srv := f.S3()
	bucket := srv.CreateBucketForTest(f.T)
	createS3Credentials(f, "s3-creds", srv.AccessKey, srv.SecretKey)
	snap := createSnapshot(f, name+"-1", name, etcdv1alpha2.SnapshotLocation{S3: s3Location(srv, bucket, "monitoring", "s3-creds")})
	if snap = waitSnapshotFinal(f, snap.Name); snap.Status.Phase != etcdv1alpha2.SnapshotPhaseComplete {
		f.T.Fatalf("snapshot %s ended %s", snap.Name, snap.Status.Phase)
	}
}
