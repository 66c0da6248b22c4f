//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestPauseResume pauses a 3-member cluster (replicas 0) and resumes it to 3
// (docs/design/membership-flows.md, "Pause and resume"): while paused one dormant EtcdMember
// remains with its PVC and no Pod, the cluster reports Available=False/Paused and
// Progressing=False/Paused and the PDB is gone; after the resume the cluster ID is unchanged, the
// dormant member is back with its member ID, and the keys written before the pause read back.
func TestPauseResume(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)
	requireOperator(f)
	const name = "pause"
	start := time.Now()
	createCluster(f, newCluster(f, name, 3))
	ec := waitConverged(f, name, 3, bootstrapTimeout)
	f.Record("bootstrap-3", since(start), "pause scenario's cluster")
	clusterID := ec.Status.ClusterID
	idsBefore := checkMembership(f, ec, 3)

	want := writeKeys(f, name, "/pause/", 20)

	start = time.Now()
	setReplicas(f, name, 0)
	ec = waitCondition(f, name, etcdv1alpha2.ConditionProgressing, metav1.ConditionFalse, "Paused", 2*scaleTimeout)
	if err := f.WaitForNoPods(f.Ctx, f.Namespace, podSelector(name), time.Minute); err != nil {
		t.Fatal(err)
	}
	f.Record("pause-3-0", since(start), "replicas 0 → Progressing=False/Paused, no Pods")
	if c := findCond(ec, etcdv1alpha2.ConditionAvailable); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Paused" {
		t.Errorf("paused: Available = %+v, want False/Paused", c)
	}
	if ec.Status.ClusterID != clusterID {
		t.Errorf("paused: status.clusterID %s, was %s", ec.Status.ClusterID, clusterID)
	}
	members, err := listMembers(f.Ctx, f, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(members) != 1 || !members[0].Spec.Dormant {
		t.Fatalf("paused: EtcdMembers %v, want one dormant member", memberNames(members))
	}
	dormant := members[0]
	if id, ok := idsBefore[dormant.Name]; !ok || dormant.Status.MemberID != id {
		t.Errorf("dormant member %s has ID %q, before the pause it was %q", dormant.Name, dormant.Status.MemberID, id)
	}
	if _, err := f.Kube.CoreV1().PersistentVolumeClaims(f.Namespace).Get(f.Ctx, "data-"+dormant.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("dormant member's PVC: %v", err)
	}
	err = f.Poll("PDB deleted while paused", time.Minute, func(ctx context.Context) (bool, string, error) {
		pdbs, err := f.Kube.PolicyV1().PodDisruptionBudgets(f.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return len(pdbs.Items) == 0, fmt.Sprintf("%d PDBs", len(pdbs.Items)), nil
	})
	if err != nil {
		t.Error(err)
	}

	start = time.Now()
	setReplicas(f, name, 3)
	ec = waitConverged(f, name, 3, 2*scaleTimeout)
	f.Record("resume-0-3", since(start), "replicas 3 → converged")
	if ec.Status.ClusterID != clusterID {
		t.Errorf("resumed: status.clusterID %s, was %s", ec.Status.ClusterID, clusterID)
	}
	idsAfter := checkMembership(f, ec, 3)
	if idsAfter[dormant.Name] != idsBefore[dormant.Name] {
		t.Errorf("dormant member %s: ID %q after the resume, %q before the pause", dormant.Name, idsAfter[dormant.Name], idsBefore[dormant.Name])
	}
	t.Logf("member IDs before %v, after %v", idsBefore, idsAfter)
	checkObjects(f, name, 3, nodeCount(f))

	readKeys(f, name, want)
}

func findCond(ec *etcdv1alpha2.EtcdCluster, typ string) *metav1.Condition {
	for i := range ec.Status.Conditions {
		if ec.Status.Conditions[i].Type == typ {
			return &ec.Status.Conditions[i]
		}
	}
	return nil
}

func memberNames(ms []etcdv1alpha2.EtcdMember) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%s(dormant=%t)", m.Name, m.Spec.Dormant))
	}
	return out
}
