package etcdmember

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdview"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/internal/podstate"
)

// Condition reasons on EtcdMember (docs/api.md, "EtcdMember status and conditions"). PodAbsent and
// TemplateUnknown are this controller's additions for an Updated condition that has no Pod, or no
// hash, to compare.
const (
	ReasonPodReady            = "PodReady"
	ReasonPodNotReady         = "PodNotReady"
	ReasonDiscoveringMemberID = "DiscoveringMemberID"
	// ReasonAwaitingMembership: a staged member's Pod runs and waits for the member to be added to
	// etcd (docs/design/membership-flows.md, "Staged joins").
	ReasonAwaitingMembership = "AwaitingMembership"
	ReasonPaused             = "Paused"
	ReasonLearner            = "Learner"
	ReasonRemoving           = "Removing"

	ReasonTemplateCurrent    = "TemplateCurrent"
	ReasonRestartPending     = "RestartPending"
	ReasonReplacementPending = "ReplacementPending"
	ReasonPodAbsent          = "PodAbsent"
	ReasonTemplateUnknown    = "TemplateUnknown"

	// ReasonDataLost is the classifier's reason for a Memory member whose Pod is gone.
	ReasonDataLost = health.ReasonDataLost

	ReasonVersionMismatch = "VersionMismatch"
	ReasonVersionMatched  = "VersionMatched"
)

// EventMemberFailed announces a member's Healthy condition turning False, with its
// classification (docs/design/conditions-and-events.md, "Events").
const EventMemberFailed = "MemberFailed"

// actionClassify is the Event action of a health classification.
const actionClassify = "Classify"

// statusInput is everything the member's status is computed from: the member as fetched, the
// Pod it controls (nil when none), and what the steps of the pass found.
type statusInput struct {
	member *etcdv1alpha2.EtcdMember
	// pod is the member's own Pod; a foreign Pod is never passed here.
	pod *corev1.Pod
	// pvcOwned says the member's PVC exists and is its own.
	pvcOwned bool
	notes    notes
	// graces are the classifier's graces; zero fields take the defaults of
	// docs/design/timings.md, "Graces".
	graces health.Graces
	// clusterID is the parent's latched etcd cluster ID, empty when unknown: a termination
	// message naming another cluster ID means the member's data belongs elsewhere.
	clusterID string
	// node is the Node the Pod is bound to, when the classification needs it (nil otherwise).
	node *health.Node
	// pvNode is the Node a Pending Pod's volume is pinned to, when the classification needs
	// it (nil otherwise).
	pvNode *health.Node
	// endpoint is what the EtcdCluster controller's last pass saw of the member's endpoint.
	endpoint etcdview.View
	// quorumLost says the parent reports Available=False/QuorumLost: nothing can be removed
	// from etcd, so nothing is replaced until the quorum is back.
	quorumLost bool
}

// condition is a condition without its bookkeeping (generation, transition time), so that the
// pure functions below can be compared in tables.
type condition struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

// computeStatus returns the member's new status: the fields this controller owns recomputed,
// the EtcdCluster controller's fields (memberID, isVoter, version) and foreign conditions kept
// as they were. Condition transition times move only when a status flips (now is used then).
func computeStatus(in statusInput, now metav1.Time) etcdv1alpha2.EtcdMemberStatus {
	m := in.member
	st := *m.Status.DeepCopy()

	if in.pod != nil {
		st.PodName, st.PodUID = in.pod.Name, string(in.pod.UID)
		st.Replicas = 1
	} else {
		// podName and podUID keep naming the last Pod: for a Memory member, a recorded UID
		// without a Pod is what marks its data as lost.
		st.Replicas = 0
	}
	st.Selector = etcdv1alpha2.LabelCluster + "=" + m.Spec.ClusterName + "," + etcdv1alpha2.LabelComponent + "=" + m.Name
	st.PVCName = ""
	if m.Spec.Storage.Medium != etcdv1alpha2.StorageMediumMemory && in.pvcOwned {
		st.PVCName = desired.PVCName(m.Name)
	}
	st.RestartBaseline = restartBaseline(in)
	st.ReadyTemplateHash = readyTemplateHash(in)

	set := func(t string, c condition) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: t, Status: c.status, Reason: c.reason, Message: c.message,
			ObservedGeneration: m.Generation, LastTransitionTime: now,
		})
	}
	set(etcdv1alpha2.ConditionReady, readyCondition(in))
	set(etcdv1alpha2.ConditionUpdated, updatedCondition(in))
	if c, ok := versionDriftedCondition(m); ok {
		set(etcdv1alpha2.ConditionVersionDrifted, c)
	}
	h, _ := memberHealth(in, now.Time)
	set(etcdv1alpha2.ConditionHealthy, h)
	return st
}

// unschedulable returns the Pod's PodScheduled condition when the scheduler reported that it
// cannot place the Pod.
func unschedulable(pod *corev1.Pod) (corev1.PodCondition, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}

// readyCondition computes Ready. The first matching row wins, most specific first: a member
// being removed or paused says so whatever its Pod does; a Pod that cannot exist says why; then
// the Pod's own readiness; then etcd's view (no member ID yet, learner).
func readyCondition(in statusInput) condition {
	m := in.member
	if !m.DeletionTimestamp.IsZero() {
		msg := "the member is being deleted"
		if in.notes.deletion != nil && in.notes.deletion.message != "" {
			msg = in.notes.deletion.message
		}
		if in.notes.deletion != nil && in.notes.deletion.blocked {
			// A held deletion changes nothing about serving: the member keeps its Pod and its
			// vote until a person decides, and the cluster counts it as it is.
			c := servingCondition(in)
			c.message += "; " + msg
			return c
		}
		return condition{metav1.ConditionFalse, ReasonRemoving, msg}
	}
	return servingCondition(in)
}

// servingCondition is Ready from the Pod and etcd's view, for a member that is not leaving.
func servingCondition(in statusInput) condition {
	m := in.member
	notReady := func(msg string) condition { return condition{metav1.ConditionFalse, ReasonPodNotReady, msg} }
	switch {
	case m.Spec.Dormant:
		msg := "the member is dormant: it has no Pod, and its data and member ID are kept on PVC " + desired.PVCName(m.Name)
		if in.pod != nil {
			msg = "the member is dormant: its Pod is being deleted, and its data and member ID are kept on PVC " + desired.PVCName(m.Name)
		}
		return condition{metav1.ConditionFalse, ReasonPaused, msg}
	case in.notes.conflict != "":
		return notReady(in.notes.conflict)
	case in.notes.memoryPodLost:
		return notReady("pod lost: this Memory member's data went with its Pod, so the Pod is not recreated; the EtcdCluster controller replaces the member")
	case in.pod == nil && m.Spec.InitialCluster == "":
		return notReady("no pod yet: waiting for the EtcdCluster controller to add the member to etcd and set spec.initialCluster")
	case in.pod == nil && in.notes.podBlocked != "":
		return notReady("no pod: " + in.notes.podBlocked)
	case in.pod == nil:
		return notReady("no pod")
	case !in.pod.DeletionTimestamp.IsZero():
		return notReady("pod is terminating")
	case !podstate.ReadyCondition(in.pod) && in.pod.Status.Phase == corev1.PodRunning && awaitingMembership(m, in.pod):
		return condition{metav1.ConditionFalse, ReasonAwaitingMembership,
			"the Pod is prepared and waits to be added to etcd: its data-dir guard starts etcd once the EtcdCluster controller adds the member as a learner"}
	case !podstate.ReadyCondition(in.pod):
		phase := in.pod.Status.Phase
		if phase == "" {
			phase = corev1.PodPending
		}
		msg := fmt.Sprintf("pod phase: %s", phase)
		// Named at once, before the pending grace makes it a Healthy condition: the scheduler's
		// words are what a person needs to fix the constraint.
		if c, ok := unschedulable(in.pod); ok && phase == corev1.PodPending {
			msg += "; unschedulable: " + c.Message
		}
		// And why its containers do not run (an image that cannot be pulled, a volume still
		// mounting), with the image named, which the phase alone does not say.
		if w := podstate.Waiting(in.pod); w != "" {
			msg += "; " + w
		}
		return notReady(msg)
	case m.Status.MemberID == "":
		return condition{metav1.ConditionFalse, ReasonDiscoveringMemberID, "pod is ready; waiting for etcd's member list to report this member's ID"}
	case !m.Status.IsVoter:
		return condition{metav1.ConditionFalse, ReasonLearner, "member " + m.Status.MemberID + " is a learner; learners are never Ready, it becomes Ready once promoted"}
	}
	return condition{metav1.ConditionTrue, ReasonPodReady, "pod is ready and member " + m.Status.MemberID + " is a voter"}
}

// updatedCondition computes Updated: does the Pod run the template the EtcdCluster controller
// authorised for this member (the template-hash annotation on the EtcdMember)? Without an
// authorised hash, the hash a Pod built now would carry stands in. Recreating a Pod whose hash
// differs is the rolling update's business; this only reports it.
func updatedCondition(in statusInput) condition {
	if in.pod == nil {
		return condition{metav1.ConditionFalse, ReasonPodAbsent, "no pod exists; the next one is built from the current template"}
	}
	running := in.pod.Annotations[etcdv1alpha2.AnnotationTemplateHash]
	want := in.member.Annotations[etcdv1alpha2.AnnotationTemplateHash]
	if want == "" {
		want = in.notes.desiredHash
	}
	if want == "" {
		return condition{metav1.ConditionUnknown, ReasonTemplateUnknown, "the member's current template hash could not be computed"}
	}
	if running == want {
		return condition{metav1.ConditionTrue, ReasonTemplateCurrent, "pod runs template " + want}
	}
	msg := fmt.Sprintf("pod runs template %q, the member's current template is %q", running, want)
	if in.member.Spec.Storage.Medium == etcdv1alpha2.StorageMediumMemory {
		return condition{metav1.ConditionFalse, ReasonReplacementPending, msg + "; a Memory member is replaced, not restarted"}
	}
	if in.notes.restartHeld != "" {
		msg += "; " + in.notes.restartHeld
	}
	return condition{metav1.ConditionFalse, ReasonRestartPending, msg}
}

// versionDriftedCondition computes VersionDrifted: does the version the member reports (written
// by the EtcdCluster controller from the member's own Status) differ from spec.version? It is
// informational, meaningful during rolls; ok is false until a version has been reported.
func versionDriftedCondition(m *etcdv1alpha2.EtcdMember) (condition, bool) {
	running := m.Status.Version
	switch running {
	case "":
		return condition{}, false
	case m.Spec.Version:
		return condition{metav1.ConditionFalse, ReasonVersionMatched, "member runs " + running + " as specified"}, true
	}
	return condition{metav1.ConditionTrue, ReasonVersionMismatch, "member runs " + running + ", spec.version is " + m.Spec.Version}, true
}

// readyConditionOf returns the member's Ready condition, or nil.
func readyConditionOf(m *etcdv1alpha2.EtcdMember) *metav1.Condition {
	return meta.FindStatusCondition(m.Status.Conditions, etcdv1alpha2.ConditionReady)
}

// patchStatus computes the member's status from the pass and patches it once, only if it
// changed. The patch is a JSON merge patch computed against the status as fetched: it carries
// only the fields this pass changed, so the EtcdCluster controller's fields (memberID, isVoter,
// version), which this controller never changes, are never sent and never clobbered. The
// conditions list is sent whole when it changes; this controller is the only writer of member
// conditions. It returns how soon a running grace needs the member looked at again (zero for
// none).
func (r *Reconciler) patchStatus(ctx context.Context, sc *scope) (time.Duration, error) {
	if sc.notes.released {
		return 0, nil
	}
	in := statusInput{member: sc.original, pvcOwned: sc.pvcOwned, notes: sc.notes, graces: r.graces}
	if sc.parent != nil {
		in.clusterID = sc.parent.Status.ClusterID
		in.quorumLost = quorumLost(sc.parent)
		if r.views != nil {
			in.endpoint = r.views.View(client.ObjectKeyFromObject(sc.parent), client.ObjectKeyFromObject(sc.original))
		}
	}
	if sc.podOwned {
		in.pod = sc.pod
	}
	node, err := r.podNode(ctx, in.pod)
	if err != nil {
		return 0, err
	}
	in.node = node
	if sc.pvcOwned {
		if in.pvNode, err = r.pvNode(ctx, in.pod, sc.pvc); err != nil {
			return 0, err
		}
	}
	if in.pod != nil && sc.original.Annotations[etcdv1alpha2.AnnotationTemplateHash] == "" && in.notes.desiredHash == "" {
		if ca, missing, err := r.caDigests(ctx, sc.original); err == nil && missing == "" {
			in.notes.desiredHash = desired.TemplateHash(&sc.original.Spec, r.images(sc.original.Spec.Version), ca)
		}
	}
	now := r.clock.Now()
	_, recheck := memberHealth(in, now)
	next := computeStatus(in, metav1.NewTime(now))
	if equality.Semantic.DeepEqual(next, sc.original.Status) {
		return recheck, nil
	}
	failed := newlyFailed(sc.original.Status.Conditions, next.Conditions)
	base := &etcdv1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Namespace: sc.original.Namespace, Name: sc.original.Name}}
	base.Status = sc.original.Status
	opts := []client.MergeFromOption{}
	if failed != nil {
		// A pass from a stale cache must not announce a transition a previous pass already
		// announced: with the lock it conflicts and reruns on fresh data instead.
		base.ResourceVersion = sc.original.ResourceVersion
		opts = append(opts, client.MergeFromWithOptimisticLock{})
	}
	target := base.DeepCopy()
	target.Status = next
	if err := r.client.Status().Patch(ctx, target, client.MergeFromWithOptions(base, opts...)); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("patching EtcdMember status: %w", err)
	}
	if failed != nil {
		r.event(sc, corev1.EventTypeWarning, EventMemberFailed, actionClassify, "Member %s is %s: %s", sc.original.Name, failed.Reason, failed.Message)
	}
	return recheck, nil
}

// newlyFailed returns the Healthy condition of next when it turned False, or changed its
// classification while False, and nil otherwise: one Event per transition, none per pass.
func newlyFailed(prev, next []metav1.Condition) *metav1.Condition {
	n := meta.FindStatusCondition(next, etcdv1alpha2.ConditionHealthy)
	if n == nil || n.Status != metav1.ConditionFalse {
		return nil
	}
	if p := meta.FindStatusCondition(prev, etcdv1alpha2.ConditionHealthy); p != nil && p.Status == n.Status && p.Reason == n.Reason {
		return nil
	}
	return n
}
