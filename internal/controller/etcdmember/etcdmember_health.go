package etcdmember

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/guard"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/internal/podstate"
)

// memberHealth classifies the member with the health classifier (docs/design/healing.md,
// "Classification"): the one source of the Healthy condition. recheck is how long until a running
// grace ends (zero for none): no watch event marks that moment, so the pass requeues for it.
func memberHealth(in statusInput, now time.Time) (c condition, recheck time.Duration) {
	res := health.Classify(observe(in, now))
	msg := res.Message
	if in.quorumLost && res.Action == health.ActionReplace {
		msg = heldByQuorum(msg)
	}
	return condition{res.Status, res.Reason, msg}, res.RecheckAfter
}

// heldByQuorum rewords a verdict that replaces the member for a cluster without quorum: a
// replacement starts with a removal from etcd, which cannot commit, so saying "is replaced" would
// be untrue (docs/design/quorum-recovery.md, "Status while quorum is lost").
func heldByQuorum(msg string) string {
	msg = strings.Replace(msg, "is replaced", "is to be replaced", 1)
	return msg + "; not yet: the cluster has lost quorum and nothing can be removed from etcd without one " +
		"(the EtcdCluster's Degraded condition says what the operator waits for and what a person can do)"
}

// reasonQuorumLost is the EtcdCluster controller's Available reason for a lost quorum
// (docs/design/conditions-and-events.md); this controller reads the parent's conditions only.
const reasonQuorumLost = "QuorumLost"

// quorumLost reports a parent whose Available condition is False/QuorumLost.
func quorumLost(c *etcdv1alpha2.EtcdCluster) bool {
	a := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionAvailable)
	return a != nil && a.Status == metav1.ConditionFalse && a.Reason == reasonQuorumLost
}

// observe fills the classifier's Observation from what one pass saw: the member as fetched,
// its own Pod, the Node that Pod runs on, the Node a Pending Pod's volume is pinned to, and the
// parent's cluster ID, and what the EtcdCluster controller's last pass saw of the member's
// endpoint (unreachable, lagging: it asks every member for its Status on every pass, this
// controller does not). The rows that need etcd's member list or alarms (removed from the
// cluster, CORRUPT alarm) are the EtcdCluster controller's own verdicts.
func observe(in statusInput, now time.Time) health.Observation {
	m := in.member
	obs := health.Observation{
		Now:            now,
		Graces:         in.graces,
		Minor:          health.Minor(runningVersion(m)),
		ClusterID:      in.clusterID,
		Memory:         m.Spec.Storage.Medium == etcdv1alpha2.StorageMediumMemory,
		Dormant:        m.Spec.Dormant,
		RecordedPodUID: m.Status.PodUID,
		PVNode:         in.pvNode,
		Etcd:           health.EtcdView{Unreachable: in.endpoint.Unreachable, Lagging: in.endpoint.Lagging, HashDiffersAt: in.endpoint.HashDiffersAt},
	}
	if in.pod == nil {
		return obs
	}
	templateCurrent := updatedCondition(in).status == metav1.ConditionTrue
	obs.Pod = podObservation(in.pod, templateCurrent, wasReady(m, in.pod), in.node)
	obs.Pod.RanTemplate = templateCurrent && ranTemplate(m, in.pod)
	obs.DataExpected = desired.DataExpected(m)
	obs.Pod.AwaitingMembership = awaitingMembership(m, in.pod)
	obs.FirstFailure = firstFailure(m, in.pod)
	obs.Pod.Container.PreviousTermination = previousTermination(in.pod, m, obs.Minor, obs.ClusterID)
	return obs
}

// awaitingMembership reports a staged member whose Pod's guard holds etcd until the member is
// added to etcd: the Pod runs the guard with --await-membership, and no etcd member ID has been
// recorded for the member yet.
func awaitingMembership(m *etcdv1alpha2.EtcdMember, pod *corev1.Pod) bool {
	if m.Status.MemberID != "" || pod == nil {
		return false
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == desired.ContainerName && slices.Contains(c.Command, "--"+guard.FlagAwaitMembership) {
			return true
		}
	}
	return false
}

// runningVersion is the version whose termination messages the member prints: the one its own
// endpoint last reported, or the one its Pod was built with before any report.
func runningVersion(m *etcdv1alpha2.EtcdMember) string {
	if m.Status.Version != "" {
		return m.Status.Version
	}
	return m.Spec.Version
}

// podObservation is what the classifier needs of the member's Pod and its etcd container.
func podObservation(pod *corev1.Pod, templateCurrent, wasReadyWithTemplate bool, node *health.Node) *health.Pod {
	p := &health.Pod{UID: string(pod.UID), CreatedAt: pod.CreationTimestamp.Time, Phase: pod.Status.Phase,
		Reason: pod.Status.Reason, Ready: podstate.ReadyCondition(pod), TemplateCurrent: templateCurrent,
		WasReadyWithTemplate: wasReadyWithTemplate && templateCurrent, Node: node}
	if p.Phase == "" {
		p.Phase = corev1.PodPending
	}
	if pod.DeletionTimestamp != nil {
		p.DeletionTimestamp = pod.DeletionTimestamp.Time
	}
	if c, ok := unschedulable(pod); ok {
		p.Unschedulable, p.UnschedulableSince, p.SchedulingMessage = true, c.LastTransitionTime.Time, c.Message
	}
	if cs := etcdContainerStatus(pod); cs != nil {
		p.Container = containerObservation(cs)
	}
	return p
}

// etcdContainerStatus returns the status of the Pod's etcd container, nil before the kubelet
// reported one.
func etcdContainerStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == desired.ContainerName {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// containerObservation reads the container's state. The most recent termination is the
// current state while the container is terminated, else the last state.
func containerObservation(cs *corev1.ContainerStatus) health.Container {
	c := health.Container{Running: cs.State.Running != nil, RestartCount: cs.RestartCount}
	if cs.State.Waiting != nil {
		c.WaitingReason = cs.State.Waiting.Reason
	}
	switch {
	case cs.State.Terminated != nil:
		c.LastTermination = termination(cs.State.Terminated)
	case cs.LastTerminationState.Terminated != nil:
		c.LastTermination = termination(cs.LastTerminationState.Terminated)
	}
	return c
}

func termination(t *corev1.ContainerStateTerminated) *health.Termination {
	return &health.Termination{ExitCode: t.ExitCode, Reason: t.Reason, Message: t.Message}
}

// previousTermination is the termination before the most recent one, which a classified fatal
// exit needs (two in a row). The API keeps it only while the container is terminated and not
// yet restarted: state.terminated is then the latest exit and lastState.terminated the one
// before. The kubelet moves the container on to waiting (CrashLoopBackOff) within seconds, so
// the condition that recorded the pair is the memory after that: while the Healthy condition
// of this same Pod (status.podUID) says the pattern the latest exit still matches, the pair
// is taken as seen. A new Pod, or an exit that matches nothing or another pattern, starts
// over.
func previousTermination(pod *corev1.Pod, m *etcdv1alpha2.EtcdMember, minor, clusterID string) *health.Termination {
	cs := etcdContainerStatus(pod)
	if cs == nil {
		return nil
	}
	if cs.State.Terminated != nil {
		if cs.LastTerminationState.Terminated != nil {
			return termination(cs.LastTerminationState.Terminated)
		}
		return nil
	}
	last := cs.LastTerminationState.Terminated
	if last == nil || string(pod.UID) != m.Status.PodUID {
		return nil
	}
	h := meta.FindStatusCondition(m.Status.Conditions, etcdv1alpha2.ConditionHealthy)
	match := health.ClassifyTermination(minor, clusterID, last.Message)
	if h == nil || h.Status != metav1.ConditionFalse || !match.Class.Replaceable() || h.Reason != string(match.Class) ||
		!strings.Contains(h.Message, "(pattern "+match.Pattern+")") {
		return nil
	}
	return termination(last)
}

// wasReady reports whether the member has been Ready with this Pod. The Pod does not record it,
// so the member's own Ready condition does: Ready is True only while the member's current Pod
// is Ready, so a Ready condition that turned False after this Pod started was True with it.
// The condition is False from the start for a Pod that never became Ready, and for a learner
// (learners are never Ready), so a learner's failure counts as a start failure, not a crash
// loop. A Ready condition still True for this same Pod (status.podUID) is the first pass to
// see it not Ready: it was Ready, which the damaged-data rule, for Pods never Ready, must know.
func wasReady(m *etcdv1alpha2.EtcdMember, pod *corev1.Pod) bool {
	if podstate.ReadyCondition(pod) {
		return true
	}
	r := readyConditionOf(m)
	if r != nil && r.Status == metav1.ConditionTrue {
		return m.Status.PodUID == string(pod.UID)
	}
	return r != nil && r.Status == metav1.ConditionFalse && pod.Status.StartTime != nil &&
		r.LastTransitionTime.After(pod.Status.StartTime.Time)
}

// firstFailure is when the member started failing, the moment its Ready condition turned
// False, and its etcd container's restart count then: status.restartBaseline, when a previous
// pass recorded it for this same Pod. Without it only memberFailureGrace can make a crash
// loop.
func firstFailure(m *etcdv1alpha2.EtcdMember, pod *corev1.Pod) health.Failure {
	r := readyConditionOf(m)
	if podstate.ReadyCondition(pod) || r == nil || r.Status != metav1.ConditionFalse {
		return health.Failure{}
	}
	f := health.Failure{At: r.LastTransitionTime.Time}
	if b := m.Status.RestartBaseline; b != nil && b.PodUID == string(pod.UID) {
		f.RestartCount = &b.RestartCount
	}
	return f
}

// restartBaseline is the status.restartBaseline a pass writes: the etcd container's restart
// count when the Pod was first seen up and not Ready, kept while it stays so, and cleared when
// it is Ready again, Pending, terminating or gone. It is taken when the failure is first seen,
// not while the member is Ready, for two reasons: a Ready member's restart count would have
// to be rewritten whenever it changed, and after the operator was down, restarts from long
// before (a node reboot last week) would count as a loop now; counted from the first pass that
// sees the failure, a loop is only ever late by the restarts that pass missed. Keyed by Pod
// UID, because a new Pod's restarts count from zero.
func restartBaseline(in statusInput) *etcdv1alpha2.RestartBaseline {
	p := in.pod
	if p == nil || podstate.ReadyCondition(p) || !p.DeletionTimestamp.IsZero() || p.Status.Phase == corev1.PodPending || p.Status.Phase == "" {
		return nil
	}
	cs := etcdContainerStatus(p)
	if cs == nil {
		return nil
	}
	if b := in.member.Status.RestartBaseline; b != nil && b.PodUID == string(p.UID) {
		return b.DeepCopy()
	}
	return &etcdv1alpha2.RestartBaseline{PodUID: string(p.UID), RestartCount: cs.RestartCount}
}

// readyTemplateHash is the status.readyTemplateHash a pass writes: the template hash of the
// member's Pod while it is Ready, else the one recorded before. It outlives the Pod: it is what
// tells a Pod recreated with the template the member ran (whose failures at every start mean
// damaged data) from a Pod with a new template (a start failure), docs/design/healing.md,
// "Damaged data".
func readyTemplateHash(in statusInput) string {
	p := in.pod
	if p != nil && p.DeletionTimestamp.IsZero() && podstate.ReadyCondition(p) {
		if h := p.Annotations[etcdv1alpha2.AnnotationTemplateHash]; h != "" {
			return h
		}
	}
	return in.member.Status.ReadyTemplateHash
}

// ranTemplate reports whether the member was Ready before in a Pod with the template this Pod
// runs. A member whose record predates status.readyTemplateHash has none until its next Ready
// Pod, and counts as not having run it.
func ranTemplate(m *etcdv1alpha2.EtcdMember, pod *corev1.Pod) bool {
	h := m.Status.ReadyTemplateHash
	return h != "" && pod.Annotations[etcdv1alpha2.AnnotationTemplateHash] == h
}

// podNode reads the Node the member's Pod is bound to, from the cache, only when the
// classification needs it: a Pod stuck terminating may be on a lost Node. A Node that does not
// exist is reported Gone; nil means it is not needed or not known.
func (r *Reconciler) podNode(ctx context.Context, pod *corev1.Pod) (*health.Node, error) {
	if pod == nil || pod.DeletionTimestamp.IsZero() || pod.Spec.NodeName == "" {
		return nil, nil
	}
	if r.noNodeReads {
		return taintEvictedNode(pod), nil
	}
	n := &corev1.Node{}
	switch err := r.client.Get(ctx, types.NamespacedName{Name: pod.Spec.NodeName}, n); {
	case apierrors.IsNotFound(err):
		return &health.Node{Name: pod.Spec.NodeName, Gone: true}, nil
	case err != nil:
		return nil, fmt.Errorf("reading Node %s: %w", pod.Spec.NodeName, err)
	}
	return nodeObservation(n), nil
}

// taintEvictedNode is what a Pod being deleted tells of its Node when the Node itself may not be
// read: the taint-eviction controller deletes Pods from a Node tainted NoExecute, which the node
// lifecycle controller does to a Node that is not ready or unreachable, and it marks them
// DisruptionTarget=True/DeletionByTaintManager. Such a Pod's Node counts as unreachable since
// that mark, so a Pod still terminating past the terminating grace is NodeLost as it would be
// with the Node read. Any other Pod says nothing (nil).
func taintEvictedNode(pod *corev1.Pod) *health.Node {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == reasonDeletionByTaintManager {
			return &health.Node{Name: pod.Spec.NodeName, Unreachable: true, NotReadySince: c.LastTransitionTime.Time}
		}
	}
	return nil
}

// reasonDeletionByTaintManager is the DisruptionTarget reason of a Pod the taint-eviction
// controller deletes (k8s.io/api names no constant for it).
const reasonDeletionByTaintManager = "DeletionByTaintManager"

// nodeObservation is what the classifier needs of a Node.
func nodeObservation(n *corev1.Node) *health.Node {
	out := &health.Node{Name: n.Name}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Ready = c.Status == corev1.ConditionTrue
			if !out.Ready {
				out.NotReadySince = c.LastTransitionTime.Time
			}
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeUnreachable {
			out.Unreachable = true
		}
	}
	return out
}

// pvNode reads the Node the volume of a Pending member Pod is pinned to, only when the
// classification needs it: a Pod that cannot be scheduled may be waiting for a Node that is
// gone or down, which no new Pod can fix. The PersistentVolume is read uncached, by name (one
// cluster-wide PV informer for a rare case would cost every operator its memory), and only
// while the Pod is Pending and unscheduled with a bound claim, so passes over running members
// read nothing. nil means it is not needed, or the volume is not pinned to one Node.
func (r *Reconciler) pvNode(ctx context.Context, pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim) (*health.Node, error) {
	if r.noNodeReads || !awaitingNode(pod) || pvc == nil || pvc.Spec.VolumeName == "" {
		return nil, nil
	}
	pv := &corev1.PersistentVolume{}
	switch err := r.apiReader.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, pv); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading PersistentVolume %s: %w", pvc.Spec.VolumeName, err)
	}
	pin, ok := pinnedNode(pv)
	if !ok {
		return nil, nil
	}
	return r.lookupNode(ctx, pin)
}

// awaitingNode reports whether the Pod is Pending and not placed: not bound to a Node yet, or
// refused by the scheduler.
func awaitingNode(pod *corev1.Pod) bool {
	if pod == nil || !pod.DeletionTimestamp.IsZero() || (pod.Status.Phase != corev1.PodPending && pod.Status.Phase != "") {
		return false
	}
	if pod.Spec.NodeName == "" {
		return true
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return true
		}
	}
	return false
}

// nodePin names the one Node a volume can be used on: by its kubernetes.io/hostname label
// (local volumes, local-path and most node-local provisioners) or by metadata.name (a
// matchFields term).
type nodePin struct {
	value      string
	byHostname bool
}

// pinnedNode returns the Node a PersistentVolume's required node affinity pins it to. Every
// term (terms are ORed) must name the same single Node; a volume usable on several Nodes, or
// pinned by other labels (a zone), is not pinned, since losing one Node does not strand it.
func pinnedNode(pv *corev1.PersistentVolume) (nodePin, bool) {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nodePin{}, false
	}
	var pin nodePin
	for i, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		p, ok := termPin(term)
		if !ok || (i > 0 && p != pin) {
			return nodePin{}, false
		}
		pin = p
	}
	return pin, pin.value != ""
}

// termPin returns the single Node one node selector term pins to: one requirement, operator
// In, one value, on the hostname label or the name field.
func termPin(term corev1.NodeSelectorTerm) (nodePin, bool) {
	switch {
	case len(term.MatchExpressions) == 1 && len(term.MatchFields) == 0:
		e := term.MatchExpressions[0]
		if e.Key == corev1.LabelHostname && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
			return nodePin{value: e.Values[0], byHostname: true}, true
		}
	case len(term.MatchFields) == 1 && len(term.MatchExpressions) == 0:
		f := term.MatchFields[0]
		if f.Key == metav1.ObjectNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
			return nodePin{value: f.Values[0]}, true
		}
	}
	return nodePin{}, false
}

// lookupNode finds the pinned Node in the cache, as podNode does. The hostname label usually
// equals the Node's name but need not (some clouds name Nodes after instance IDs), so a
// hostname is looked up by label first and by name after; only when neither finds a Node is
// it gone, because a Node wrongly called gone gets its member replaced.
func (r *Reconciler) lookupNode(ctx context.Context, pin nodePin) (*health.Node, error) {
	if pin.byHostname {
		var nodes corev1.NodeList
		if err := r.client.List(ctx, &nodes, client.MatchingLabels{corev1.LabelHostname: pin.value}); err != nil {
			return nil, fmt.Errorf("listing the Node labelled %s=%s: %w", corev1.LabelHostname, pin.value, err)
		}
		switch len(nodes.Items) {
		case 0:
		case 1:
			return nodeObservation(&nodes.Items[0]), nil
		default:
			// Two Nodes claim one hostname: which one holds the volume cannot be told, so
			// neither is called lost.
			return nil, nil
		}
	}
	n := &corev1.Node{}
	switch err := r.client.Get(ctx, types.NamespacedName{Name: pin.value}, n); {
	case apierrors.IsNotFound(err):
		return &health.Node{Name: pin.value, Gone: true}, nil
	case err != nil:
		return nil, fmt.Errorf("reading Node %s: %w", pin.value, err)
	}
	return nodeObservation(n), nil
}
