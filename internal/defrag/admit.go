package defrag

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// ReasonReconciled is the EtcdCluster's Progressing reason of a converged cluster (docs/design/conditions-and-events.md).
const ReasonReconciled = "Reconciled"

// Admission is whether a Pending run may start, and why not.
type Admission struct {
	Admitted        bool
	Reason, Message string
}

// Admit decides whether run may leave Pending (docs/defrag.md, "One run at a time"): its
// cluster exists and has converged for its current generation (Progressing=False/Reconciled: no
// membership change, roll or storage step in flight; a NOSPACE alarm does not hold it), no other
// run of the cluster is Running, and no earlier run of the cluster (by creation, then name)
// waits ahead of it. runs are the namespace's EtcdDefrags, run itself included or not.
func Admit(run *etcdv1alpha2.EtcdDefrag, runs []etcdv1alpha2.EtcdDefrag, cluster *etcdv1alpha2.EtcdCluster) Admission {
	name := run.Spec.ClusterRef.Name
	if cluster == nil {
		return Admission{Reason: ReasonClusterNotFound, Message: fmt.Sprintf("EtcdCluster %s does not exist; the run starts once it does", name)}
	}
	if running := othersOf(run, runs, func(o *etcdv1alpha2.EtcdDefrag) bool { return o.Status.Phase == etcdv1alpha2.DefragPhaseRunning }); len(running) > 0 {
		return Admission{Reason: ReasonQueued, Message: fmt.Sprintf("EtcdDefrag %s is running on cluster %s; one run at a time", strings.Join(running, ", "), name)}
	}
	if ahead := othersOf(run, runs, func(o *etcdv1alpha2.EtcdDefrag) bool { return !Final(o.Status.Phase) && before(o, run) }); len(ahead) > 0 {
		return Admission{Reason: ReasonQueued, Message: fmt.Sprintf("waiting behind EtcdDefrag %s, created earlier for cluster %s", strings.Join(ahead, ", "), name)}
	}
	p := meta.FindStatusCondition(cluster.Status.Conditions, etcdv1alpha2.ConditionProgressing)
	switch {
	case p == nil || p.ObservedGeneration != cluster.Generation:
		return Admission{Reason: ReasonWaitingForCluster, Message: fmt.Sprintf("cluster %s has not reported on its generation %d yet", name, cluster.Generation)}
	case p.Reason != ReasonReconciled:
		return Admission{Reason: ReasonWaitingForCluster, Message: fmt.Sprintf("cluster %s is not converged (Progressing %s: %s); the run starts once it is", name, p.Reason, p.Message)}
	}
	return Admission{Admitted: true, Reason: ReasonRunning}
}

// othersOf names, sorted, the runs of run's cluster other than run that match.
func othersOf(run *etcdv1alpha2.EtcdDefrag, runs []etcdv1alpha2.EtcdDefrag, match func(*etcdv1alpha2.EtcdDefrag) bool) []string {
	var out []string
	for i := range runs {
		o := &runs[i]
		if o.Name == run.Name || o.Spec.ClusterRef.Name != run.Spec.ClusterRef.Name || !o.DeletionTimestamp.IsZero() || !match(o) {
			continue
		}
		out = append(out, o.Name)
	}
	slices.Sort(out)
	return out
}

// before orders runs first come, first served: by creation, then by name (creation times
// have one-second resolution).
func before(a, b *etcdv1alpha2.EtcdDefrag) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// RunningOn names, sorted, the Running runs of cluster among runs: what the EtcdCluster
// controller holds its membership changes and roll steps for.
func RunningOn(cluster string, runs []etcdv1alpha2.EtcdDefrag) []string {
	var out []string
	for i := range runs {
		if runs[i].Spec.ClusterRef.Name == cluster && runs[i].Status.Phase == etcdv1alpha2.DefragPhaseRunning {
			out = append(out, runs[i].Name)
		}
	}
	slices.Sort(out)
	return out
}
