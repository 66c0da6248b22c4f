package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdview"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/metrics"
)

// Event reasons of the cluster's state transitions (behaviour.md §23).
const (
	eventSpecChangePending = "SpecChangePending"
	eventDeadlineExceeded  = "DeadlineExceeded"
)

// latch applies the locking pattern (behaviour.md §5) to status: observed, observedGeneration
// and progressDeadline. Convergence is judged against the target latched so far. An adoption is
// only decided here; adopt writes it before the pass may act on it.
func (p *pass) latch(context.Context) (ctrl.Result, error) {
	c := p.cluster
	if c.Status.ClusterToken == "" {
		c.Status.ClusterToken = membership.Token(c.Namespace, c.Name, string(c.UID))
	}
	c.Status.Selector = etcdv1alpha2.LabelCluster + "=" + c.Name
	s := p.scope()
	p.lock = membership.Decide(membership.LockInput{
		Spec: &c.Spec, Generation: c.Generation,
		Observed: c.Status.Observed, ObservedGeneration: c.Status.ObservedGeneration, Deadline: c.Status.ProgressDeadline,
		Converged:       c.Status.Observed != nil && membership.Converged(&s),
		Now:             p.now,
		VersionRejected: p.versionRejection(),
	})
	c.Status.Observed = p.lock.Observed
	c.Status.ObservedGeneration = p.lock.ObservedGeneration
	c.Status.ProgressDeadline = p.lock.Deadline
	switch {
	case p.lock.Rejected != "":
		p.warnVersionRejected(p.lock.Rejected)
	case p.lock.Adopted:
		p.forgetVersionRejected()
	}
	if p.lock.Pending {
		p.r.mu.Lock()
		key := p.nsName()
		first := p.r.pendingWarned[key] != c.Generation
		p.r.pendingWarned[key] = c.Generation
		p.r.mu.Unlock()
		if first {
			p.event(corev1.EventTypeWarning, eventSpecChangePending, p.lock.PendingMessage)
		}
	}
	return ctrl.Result{}, nil
}

// syncMemberStatus writes memberID, isVoter and version to each member from etcd's member list
// and Status answers, the member fields this controller owns (behaviour.md §1). It patches only
// those fields, computed from the member as read, and only when they changed.
func (p *pass) syncMemberStatus(ctx context.Context) (ctrl.Result, error) {
	if !p.view.Known {
		return ctrl.Result{}, nil
	}
	s := p.scope()
	for i := range p.members {
		m := &p.members[i]
		e, ok := s.EtcdMemberOf(s.Members[i])
		if !ok || m.Spec.Dormant {
			continue
		}
		st := m.Status
		st.MemberID = e.IDHex()
		st.IsVoter = !e.IsLearner
		if answer, ok := p.view.Statuses[e.ID]; ok && answer.Version != "" {
			st.Version = answer.Version
		}
		if _, err := p.patchMemberStatus(ctx, m, st.MemberID, st.IsVoter, st.Version); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// syncInPlaceTemplate applies the in-place part of the latched template to existing members:
// additionalMetadata and imagePullSecrets. Neither restarts etcd (the member controller merges
// metadata onto the Pod and PVC in place and uses pull Secrets at the next Pod creation), so they
// need no roll and no lock step (api.md §2.6).
func (p *pass) syncInPlaceTemplate(ctx context.Context) (ctrl.Result, error) {
	o := p.cluster.Status.Observed
	if o == nil {
		return ctrl.Result{}, nil
	}
	for i := range p.members {
		m := &p.members[i]
		if !m.DeletionTimestamp.IsZero() ||
			(equality.Semantic.DeepEqual(m.Spec.AdditionalMetadata, o.AdditionalMetadata) &&
				equality.Semantic.DeepEqual(m.Spec.ImagePullSecrets, o.ImagePullSecrets)) {
			continue
		}
		before := m.DeepCopy()
		m.Spec.AdditionalMetadata = o.AdditionalMetadata.DeepCopy()
		m.Spec.ImagePullSecrets = slices.Clone(o.ImagePullSecrets)
		if err := p.r.client.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("updating the in-place template of EtcdMember %s: %w", m.Name, err)
		}
	}
	return ctrl.Result{}, nil
}

// patchMemberStatus merge-patches the three status fields this controller owns, leaving the
// member controller's fields (podName, podUID, pvcName, replicas, selector, conditions) alone.
// It reports whether it wrote: nothing is written when the fields already hold the values.
func (p *pass) patchMemberStatus(ctx context.Context, m *etcdv1alpha2.EtcdMember, id string, voter bool, version string) (bool, error) {
	if m.Status.MemberID == id && m.Status.IsVoter == voter && m.Status.Version == version {
		return false, nil
	}
	before := m.DeepCopy()
	m.Status.MemberID, m.Status.IsVoter, m.Status.Version = id, voter, version
	if err := p.r.client.Status().Patch(ctx, m, client.MergeFrom(before)); err != nil {
		return false, fmt.Errorf("patching the status of EtcdMember %s: %w", m.Name, err)
	}
	failpoint.Inject(failpoint.MemberStatusPatched)
	return true, nil
}

// adopt makes an adoption durable before anything acts on it (behaviour.md §5): when latch
// adopted a new target, the full status — observed, observedGeneration, progressDeadline and the
// Progressing condition naming the adoption — is written now, and the pass ends there. The next
// pass acts on the target it reads back. Acting in the adopting pass would leave the adoption in
// memory until the deferred patch: a crash after the action (a removal-reason annotation, a
// MemberRemove, a create) would lose it while the action persisted, and the restarted operator,
// finding a world no longer converged, would finish the action and then drive the cluster back
// to the old target — needless member churn. The deferred patch of this pass then finds nothing
// changed, so the pass still writes status once.
func (p *pass) adopt(ctx context.Context) (ctrl.Result, error) {
	if !p.lock.Adopted {
		return ctrl.Result{}, nil
	}
	s, counts := p.computeStatus()
	// The PDB first, as in finish: once status shows the new target, the PDB already protects
	// its quorum (a reader of both never sees a target whose quorum the PDB does not cover).
	if err := p.applyPDB(ctx, int32(counts.Voters), s.Target); err != nil { //nolint:gosec // G115: bounded by the member count
		return ctrl.Result{}, err
	}
	wrote, err := p.writeStatus(ctx)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("recording the adoption of generation %d: %w", p.lock.ObservedGeneration, err)
	}
	if wrote {
		failpoint.Inject(failpoint.SpecAdopted)
	}
	return ctrl.Result{RequeueAfter: nextStepDelay}, nil
}

// finish runs on every path of a pass (behaviour.md §2 step 8): status, conditions and the PDB
// are computed from the scope and written if they changed.
func (p *pass) finish(ctx context.Context) error {
	if !p.scoped {
		return nil // nothing was observed: nothing honest to write
	}
	s, counts := p.computeStatus()
	var errs []error
	if err := p.applyPDB(ctx, int32(counts.Voters), s.Target); err != nil { //nolint:gosec // G115: bounded by the member count
		errs = append(errs, err)
	}
	if _, err := p.writeStatus(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// computeStatus fills the cluster's status from the pass's scope: counts, running version and
// conditions. It returns the scope and counts it used.
func (p *pass) computeStatus() (membership.Scope, membership.Counts) {
	c := p.cluster
	s := p.scope()
	p.publishEndpointViews(&s)
	counts := membership.Count(&s)
	c.Status.ReadyMembers = int32(counts.ReadyVoters) //nolint:gosec // G115: bounded by the member count
	c.Status.UpdatedMembers = int32(counts.Updated)   //nolint:gosec // G115: as above
	c.Status.BrokenMembers = int32(counts.Broken)     //nolint:gosec // G115: as above
	if v := p.runningVersion(&s); v != "" {
		c.Status.RunningVersion = v
	}
	c.Status.MinorSince = nextMinorSince(c.Status.MinorSince, p.minorInput(&s))
	if p.action.Kind == "" {
		p.action = membership.Next(s) // the pass stopped before planning: report what it would do
	}
	if p.action.Kind == membership.KindNone && p.action.Reason == membership.ReasonReconciled {
		// Converged: the next member that fails to start begins a fresh back-off.
		c.Status.ReplacementBackoff = nil
	}
	for _, cond := range membership.Conditions(membership.ConditionInput{Scope: &s, Action: p.action, Lock: p.lock, Generation: c.Generation}) {
		meta.SetStatusCondition(&c.Status.Conditions, cond)
	}
	p.recordConditionMetrics()
	return s, counts
}

// writeStatus patches the cluster's status if it differs from what was last read or written,
// announces the transitions it records, and reports whether it wrote.
func (p *pass) writeStatus(ctx context.Context) (bool, error) {
	c := p.cluster
	if equality.Semantic.DeepEqual(p.original.Status, c.Status) {
		return false, nil
	}
	// Optimistic lock: a pass that started from a stale cache must not write over a newer
	// status (nor announce a latch a previous pass already made); it conflicts and reruns.
	if err := p.r.client.Status().Patch(ctx, c, client.MergeFromWithOptions(p.original, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, fmt.Errorf("patching EtcdCluster status: %w", err)
	}
	// Transitions are announced once the status that records them is written, so a pass from
	// a stale cache, which conflicts, announces nothing.
	p.transitionEvents()
	latched := p.original.Status.ClusterID == "" && c.Status.ClusterID != ""
	// What was written is the base of any later write of this pass.
	p.original = c.DeepCopy()
	if latched {
		p.event(corev1.EventTypeNormal, eventClusterBootstrapped, "cluster "+c.Status.ClusterID+" formed")
		failpoint.Inject(failpoint.ClusterIDLatched)
	}
	return true, nil
}

// minorInput gathers what nextMinorSince needs from the pass.
func (p *pass) minorInput(s *membership.Scope) minorInput {
	in := minorInput{
		forming:       p.original.Status.ClusterID == "",
		known:         s.Etcd.Known,
		statuses:      s.Etcd.Statuses,
		snapshotCount: p.snapshotCount(),
	}
	if o := p.cluster.Status.Observed; o != nil {
		in.latched = o.Version
	}
	for _, m := range s.Etcd.Members {
		in.members = append(in.members, m.ID)
	}
	return in
}

// runningVersion is the lowest version running members report; for a paused cluster, the
// dormant member's last one.
func (p *pass) runningVersion(s *membership.Scope) string {
	var versions []string
	for _, st := range s.Etcd.Statuses {
		if st.Version != "" {
			versions = append(versions, st.Version)
		}
	}
	if len(versions) == 0 && s.Target == 0 {
		for i := range p.members {
			if p.members[i].Spec.Dormant && p.members[i].Status.Version != "" {
				versions = append(versions, p.members[i].Status.Version)
			}
		}
	}
	if len(versions) == 0 {
		return ""
	}
	slices.SortFunc(versions, compareVersions)
	return versions[0]
}

// compareVersions orders dotted numeric versions ("3.5.21" < "3.6.0").
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

func (p *pass) recordConditionMetrics() {
	states := map[string]metrics.ConditionState{}
	for _, t := range []string{etcdv1alpha2.ConditionAvailable, etcdv1alpha2.ConditionDegraded} {
		if cond := meta.FindStatusCondition(p.cluster.Status.Conditions, t); cond != nil {
			states[t] = metrics.ConditionState{Status: string(cond.Status), Reason: cond.Reason}
		}
	}
	metrics.SetClusterConditions(p.key(), states)
}

// transitionEvents emits one Warning per state transition into QuorumLost, AllMembersLost,
// missing TLS material or an expired deadline (behaviour.md §23); staying in a state emits
// nothing. Member-scoped transitions (MemberUnschedulable) are announced by the EtcdMember
// controller, which sees the member's own transition.
func (p *pass) transitionEvents() {
	was := func(t, reason string) bool {
		c := meta.FindStatusCondition(p.original.Status.Conditions, t)
		return c != nil && c.Reason == reason
	}
	for _, w := range []struct{ t, reason string }{
		{etcdv1alpha2.ConditionAvailable, membership.ReasonQuorumLost},
		{etcdv1alpha2.ConditionAvailable, membership.ReasonAllMembersLost},
		{etcdv1alpha2.ConditionAvailable, membership.ReasonCertManagerNotInstalled},
		{etcdv1alpha2.ConditionDegraded, membership.ReasonTLSSecretMissing},
		{etcdv1alpha2.ConditionProgressing, membership.ReasonDeadlineExceeded},
		{etcdv1alpha2.ConditionProgressing, membership.ReasonBootstrapStalled},
		{etcdv1alpha2.ConditionProgressing, membership.ReasonStorageExpansionUnsupported},
	} {
		cond := meta.FindStatusCondition(p.cluster.Status.Conditions, w.t)
		if cond != nil && cond.Reason == w.reason && !was(w.t, w.reason) {
			reason := w.reason
			if reason == membership.ReasonBootstrapStalled {
				reason = eventDeadlineExceeded
			}
			p.event(corev1.EventTypeWarning, reason, cond.Message)
		}
	}
	if cond := meta.FindStatusCondition(p.cluster.Status.Conditions, etcdv1alpha2.ConditionProgressing); cond != nil && cond.Reason == membership.ReasonReconciled {
		p.rollCompleted()
	}
}

// publishEndpointViews hands the EtcdMember controller what this pass saw of every member's
// endpoint (unreachable, lagging), which it classifies into the member's Healthy.
func (p *pass) publishEndpointViews(s *membership.Scope) {
	if p.r.views == nil {
		return
	}
	views := map[string]etcdview.View{}
	for name, v := range membership.EndpointViews(s) {
		views[name] = etcdview.View{Unreachable: v.Unreachable, Lagging: v.Lagging}
	}
	p.r.views.Publish(types.NamespacedName{Namespace: p.cluster.Namespace, Name: p.cluster.Name}, views)
}
