package defrag

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/mutation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/status"
	operatordefrag "github.com/etcd-operator/etcd-operator/internal/defrag"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// Rules of a pod-mode defrag (docs/kubectl-etcd.md, "Compatibility mode (--pod)").
const (
	// RuleMemberAnswered refuses when the Pod's etcd did not answer Status: a member that does
	// not answer can be neither checked nor seen to finish.
	RuleMemberAnswered = "member-answered"
	// RuleQuorumMargin refuses a voter whose stall would cost the cluster its quorum: the
	// operator's Disrupt gate, plus a refusal of the single voter, which the operator may
	// disrupt but a person should not by hand.
	RuleQuorumMargin = "quorum-margin"
	// RuleOperatorBusy refuses a Pod whose EtcdCluster is Progressing: the operator may restart
	// or remove another member meanwhile, and does not know of this defragmentation.
	RuleOperatorBusy = "operator-busy"
	// RuleNotLeader refuses the leader of a cluster of several voters: blocked, it would hold
	// every write, which is why the operator moves leadership away before defragmenting it
	// (docs/defrag.md, "Order and safety").
	RuleNotLeader = "not-leader"
)

// RunPod defragments the one member --pod reaches, directly: the compatibility mode's defrag,
// for a Pod no EtcdCluster manages (yet).
func RunPod(ctx context.Context, o Options, d *invocation.Deps) error {
	if o.Member != "" || o.Rule != nil {
		return invocation.Usagef("--member and --rule select members of a cluster-wide run; defrag --pod defragments the Pod's own member only")
	}
	obs, sess, err := etcdobserve.Read(ctx, d, "")
	if err != nil {
		return err
	}
	defer func() { _ = sess.Close() }()
	p, m := PlanPod(obs, managing(ctx, d, obs))
	return mutation.Execute(ctx, d, p, func(ctx context.Context) error {
		dctx, cancel := context.WithTimeout(ctx, operatordefrag.MemberTimeout)
		defer cancel()
		if err := sess.Defragment(dctx, m.Endpoint); err != nil {
			return fmt.Errorf("defragmenting %s through Pod %s: %w", m.Name, obs.Pod.Pod.Name, err)
		}
		after := ""
		sctx, scancel := context.WithTimeout(ctx, d.Globals.Timeout)
		defer scancel()
		if st, err := sess.Status(sctx, m.Endpoint); err == nil {
			after = fmt.Sprintf(": database %s → %s", status.Bytes(m.Status.DBSize), status.Bytes(st.DBSize))
		}
		_, _ = fmt.Fprintf(d.ErrOut, "Defragmented %s%s.\n", m.Name, after)
		return nil
	})
}

// managing is the EtcdCluster that the Pod's cluster label names, when it exists and can be
// read; nil otherwise (a legacy Pod, a cluster that is gone, a Role without access to it).
func managing(ctx context.Context, d *invocation.Deps, obs *etcdobserve.Observation) *etcdv1alpha2.EtcdCluster {
	pod := obs.Pod.Pod
	name := pod.Labels[etcdv1alpha2.LabelCluster]
	if name == "" {
		return nil
	}
	c := &etcdv1alpha2.EtcdCluster{}
	if err := d.Kube.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, c); err != nil {
		return nil
	}
	return c
}

// PlanPod decides whether to defragment the member obs's Pod runs; managed is the EtcdCluster
// that manages the Pod, nil when none does.
func PlanPod(obs *etcdobserve.Observation, managed *etcdv1alpha2.EtcdCluster) (*mutation.Plan, *etcdobserve.Member) {
	c := obs.State.Cluster
	p := mutation.New("defrag", c.Namespace, c.Name)
	obs.Mark(p)
	m := podMember(obs)
	if m == nil || m.Status == nil {
		why := obs.Pod.StatusErr
		if m == nil && why == "" {
			why = "etcd lists no member that the Pod runs"
		}
		p.Check(RuleMemberAnswered, false, fmt.Sprintf("the etcd of Pod %s did not answer Status (%s): a member that does not answer can be neither checked nor seen to finish",
			obs.Pod.Pod.Name, etcdclient.Sanitize(why)))
		return p, nil
	}
	p.Check(RuleMemberAnswered, true, fmt.Sprintf("%s (%s) answered: database %s, %s in use", m.Name, etcdclient.FormatID(m.ID),
		status.Bytes(m.Status.DBSize), status.Bytes(m.Status.DBSizeInUse)))
	if !checkManaged(p, managed) || !checkMargin(p, obs, m) || !checkNotLeader(p, obs, m) {
		return p, nil
	}
	p.Step("call", "etcd Defragment", fmt.Sprintf("defragment %s through Pod %s: it serves no reads or writes until its database is rewritten (up to %s)",
		m.Name, obs.Pod.Pod.Name, operatordefrag.MemberTimeout))
	return p, m
}

// podMember is the member the Pod runs.
func podMember(obs *etcdobserve.Observation) *etcdobserve.Member {
	for i := range obs.Members {
		if obs.Target(obs.Members[i]) {
			return &obs.Members[i]
		}
	}
	return nil
}

func checkManaged(p *mutation.Plan, c *etcdv1alpha2.EtcdCluster) bool {
	if c == nil {
		p.Check(RuleOperatorBusy, true, "no EtcdCluster of this operator manages the Pod")
		return true
	}
	if cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionProgressing); cond != nil && cond.Status == "True" {
		p.Check(RuleOperatorBusy, false, fmt.Sprintf("EtcdCluster %s manages the Pod and is Progressing (%s): it may restart or remove another member meanwhile; "+
			"run kubectl etcd defrag %s instead, which the operator carries out in its safe order", c.Name, cond.Reason, c.Name))
		return false
	}
	p.Check(RuleOperatorBusy, true, fmt.Sprintf("EtcdCluster %s manages the Pod and is not Progressing; it is not told of this defragmentation (kubectl etcd defrag %s would be)", c.Name, c.Name))
	return true
}

// checkMargin applies the operator's Disrupt gate (docs/design/quorum.md) over pod mode's view,
// where the other voters count as healthy only by their Ready Pods, and refuses the single
// voter too: the gate allows the operator to stall a cluster's only voter, not a person by hand.
func checkMargin(p *mutation.Plan, obs *etcdobserve.Observation, m *etcdobserve.Member) bool {
	if m.Learner {
		p.Check(RuleQuorumMargin, true, m.Name+" is a learner: it does not vote, so stalling it costs no quorum")
		return true
	}
	dec := quorum.Check(obs.QuorumView(), quorum.Disrupt(m.Name))
	switch {
	case !dec.Allowed:
		p.Check(RuleQuorumMargin, false, dec.Message+evidence(obs, m))
		return false
	case dec.Disruptive:
		p.Check(RuleQuorumMargin, false, fmt.Sprintf("%s is the only voter (quorum margin 0): the cluster serves nothing while it defragments; "+
			"add a member first, or take a snapshot and accept the outage by calling etcdctl defrag yourself", m.Name))
		return false
	}
	p.Check(RuleQuorumMargin, true, dec.Message+evidence(obs, m))
	return true
}

// checkNotLeader refuses the leader; checkMargin has refused a single voter already.
func checkNotLeader(p *mutation.Plan, obs *etcdobserve.Observation, m *etcdobserve.Member) bool {
	if m.Learner || m.Status.Leader != m.ID {
		p.Check(RuleNotLeader, true, m.Name+" does not lead the cluster")
		return true
	}
	p.Check(RuleNotLeader, false, fmt.Sprintf("%s leads the cluster, and a blocked leader holds every write: move leadership away first "+
		"(kubectl etcd move-leader --pod %s --to MEMBER), then defragment it through its Pod", m.Name, obs.Pod.Pod.Name))
	return false
}

// evidence says on what the other voters' health rests in pod mode.
func evidence(obs *etcdobserve.Observation, m *etcdobserve.Member) string {
	var ready, not []string
	for _, o := range obs.Members {
		if o.ID == m.ID || o.Learner {
			continue
		}
		if why := obs.Unhealthy(o); why != "" {
			not = append(not, o.Name+" "+why)
		} else {
			ready = append(ready, o.Name)
		}
	}
	var parts []string
	if len(ready) > 0 {
		parts = append(parts, strings.Join(ready, ", ")+" counted healthy by their Ready Pods")
	}
	if len(not) > 0 {
		parts = append(parts, strings.Join(not, "; "))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}
