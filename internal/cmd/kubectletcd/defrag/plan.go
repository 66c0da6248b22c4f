package defrag

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/mutation"
	operatordefrag "github.com/etcd-operator/etcd-operator/internal/defrag"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/podstate"
)

// Rules this command checks.
const (
	// RuleClusterPaused refuses a run over a paused cluster: no member runs to defragment.
	RuleClusterPaused = "cluster-paused"
	// RuleRunInFlight refuses a run while another of the same cluster is not final: the new one
	// would only queue behind it and defragment the same members again.
	RuleRunInFlight = "run-in-flight"
	// RuleAdmission reports whether the operator starts the run at once (docs/defrag.md,
	// "How a run goes").
	RuleAdmission = "admission"
	// RulePreview reports what the rule selects now; the operator evaluates it again when the
	// run starts.
	RulePreview = "preview"
)

// maxNameLength is the longest object name the API server accepts.
const maxNameLength = 253

// Build is the EtcdDefrag a manual run of c at now creates: <cluster>-manual-<UTC time>,
// labelled with its cluster like the runs of an EtcdDefragPolicy (docs/defrag.md).
func Build(c *etcdv1alpha2.EtcdCluster, rule *etcdv1alpha2.DefragRule, now time.Time) *etcdv1alpha2.EtcdDefrag {
	suffix := "-manual-" + now.UTC().Format("20060102-150405")
	prefix := c.Name
	if len(prefix)+len(suffix) > maxNameLength {
		prefix = strings.TrimRight(prefix[:maxNameLength-len(suffix)], "-.")
	}
	return &etcdv1alpha2.EtcdDefrag{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: c.Namespace,
			Name:      prefix + suffix,
			Labels:    map[string]string{etcdv1alpha2.LabelCluster: c.Name},
		},
		Spec: etcdv1alpha2.EtcdDefragSpec{ClusterRef: corev1.LocalObjectReference{Name: c.Name}, Rule: rule},
	}
}

// Plan decides whether to create run for cluster c; runs are the namespace's EtcdDefrags and
// preview what the rule selects now (nil when etcd was not read, with previewErr saying why).
func Plan(c *etcdv1alpha2.EtcdCluster, run *etcdv1alpha2.EtcdDefrag, runs []etcdv1alpha2.EtcdDefrag, preview []etcdv1alpha2.DefragMemberStatus, previewErr string) *mutation.Plan {
	p := mutation.New("defrag", c.Namespace, c.Name)
	if clusterread.Replicas(c) == 0 {
		p.Check(RuleClusterPaused, false, "the cluster is paused (spec.replicas 0): no member runs, so there is nothing to defragment")
		return p
	}
	var inFlight []string
	for _, r := range runs {
		if r.Spec.ClusterRef.Name == c.Name && !operatordefrag.Final(r.Status.Phase) && r.DeletionTimestamp.IsZero() {
			inFlight = append(inFlight, fmt.Sprintf("%s (%s)", r.Name, phaseOf(r)))
		}
	}
	if len(inFlight) > 0 {
		p.Check(RuleRunInFlight, false, fmt.Sprintf("EtcdDefrag %s of %s is not finished; a new run would queue behind it and defragment the same members again. "+
			"Follow it with kubectl get etcddefrag -w, or delete it first", strings.Join(inFlight, ", "), c.Name))
		return p
	}
	p.Check(RuleRunInFlight, true, "no other run of the cluster is pending or running")
	if a := operatordefrag.Admit(run, runs, c); a.Admitted {
		p.Check(RuleAdmission, true, "the operator starts the run at once")
	} else {
		p.Check(RuleAdmission, true, fmt.Sprintf("the run waits (%s): %s", a.Reason, a.Message))
	}
	previewChecks(p, preview, previewErr)
	p.Step("create", "EtcdDefrag "+run.Namespace+"/"+run.Name, fmt.Sprintf("spec.clusterRef %s, %s; one member at a time, followers first, the leader last, each only while the quorum can spare it", c.Name, describeRule(run.Spec.Rule)))
	return p
}

func previewChecks(p *mutation.Plan, preview []etcdv1alpha2.DefragMemberStatus, previewErr string) {
	if preview == nil {
		p.Check(RulePreview, true, "not previewed: "+previewErr)
		return
	}
	for _, m := range preview {
		verb := "would be defragmented"
		if m.Outcome == etcdv1alpha2.DefragOutcomeSkipped {
			verb = "would be skipped"
		}
		p.Check(RulePreview, true, fmt.Sprintf("%s (%s) %s: %s", m.Name, m.Role, verb, m.Reason))
	}
	if len(preview) == 0 {
		p.Check(RulePreview, true, "no member with a running Pod is listed by etcd")
	}
}

// Preview is what the operator's own rule evaluation (internal/defrag.Start) selects over obs
// now, in the order the run would go.
func Preview(obs *etcdobserve.Observation, rule *etcdv1alpha2.DefragRule, now time.Time) []etcdv1alpha2.DefragMemberStatus {
	v := operatordefrag.View{Now: now}
	quota := etcdobserve.Quota(obs.State.Cluster)
	for _, m := range obs.Members {
		// The controller lists the members with a running Pod that etcd knows by name.
		if m.CR == nil || !podstate.Running(m.Pod) {
			continue
		}
		dm := operatordefrag.Member{Name: m.Name, ID: m.ID, Learner: m.Learner, Answered: m.Status != nil,
			PodReady: podstate.ReadyCondition(m.Pod), CorruptAlarm: obs.HasAlarm(m.ID, etcdclient.AlarmCorrupt)}
		if m.Status != nil {
			dm.Sizes = operatordefrag.Sizes{DBSize: m.Status.DBSize, DBSizeInUse: m.Status.DBSizeInUse, Quota: quota}
		}
		v.Members = append(v.Members, dm)
	}
	if l := obs.Leader(); l != nil {
		v.Leader = l.ID
	}
	for _, a := range obs.Alarms {
		v.NoSpace = v.NoSpace || a.Type == etcdclient.AlarmNoSpace
	}
	out := operatordefrag.Start(rule, v)
	if out == nil {
		out = []etcdv1alpha2.DefragMemberStatus{}
	}
	return out
}

func phaseOf(r etcdv1alpha2.EtcdDefrag) etcdv1alpha2.DefragPhase {
	if r.Status.Phase == "" {
		return etcdv1alpha2.DefragPhasePending
	}
	return r.Status.Phase
}
