package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// Event reasons of the rolling update (behaviour.md §23).
const (
	eventRollingUpdateStarted    = "RollingUpdateStarted"
	eventMemberUpdated           = "MemberUpdated"
	eventRollingUpdateDisruptive = "RollingUpdateDisruptive"
	eventRollingUpdateCompleted  = "RollingUpdateCompleted"
)

// templateHash is the hash of member template spec as the member controller renders its Pod:
// the same function over the same images (etcd's, and the guard's for PVC members). Empty for a member with TLS: its hash includes the
// digests of CA bundles this controller does not read yet, and TLS clusters are not rolled.
func (p *pass) templateHash(spec *etcdv1alpha2.EtcdMemberSpec) string {
	if spec.TLS != nil {
		return ""
	}
	return desired.TemplateHash(spec, desired.MemberImages(p.r.imageRepository, spec.Version, p.r.guardImage), desired.CADigests{})
}

// wantHash is the template hash of member m under the latched target; empty when unknown.
func (p *pass) wantHash(m *etcdv1alpha2.EtcdMember) string {
	o := p.memberTarget(m)
	if o == nil {
		return ""
	}
	spec := m.Spec.DeepCopy()
	membership.ApplyTemplate(spec, o)
	return p.templateHash(spec)
}

// authorise writes the latched template and its hash onto a member in one patch (behaviour.md
// §12). The member controller restarts the member's Pod only when the Pod runs another hash, so
// a disruptive authorisation is one rolling-update step: quorum-gated by the planner, checked
// once more against a fresh member list, announced with an Event.
func (p *pass) authorise(ctx context.Context, a membership.Action) error {
	m, err := p.member(a.Member)
	if err != nil {
		return err
	}
	if a.Disrupts {
		if err := p.stillPlanned(ctx, a); err != nil {
			return err
		}
	}
	before := m.DeepCopy()
	membership.ApplyTemplate(&m.Spec, p.memberTarget(m))
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[etcdv1alpha2.AnnotationTemplateHash] = a.Hash
	if err := p.r.client.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("authorising template %s on EtcdMember %s: %w", a.Hash, m.Name, err)
	}
	failpoint.Inject(failpoint.TemplateAuthorised)
	if !a.Disrupts {
		return nil
	}
	p.r.mu.Lock()
	started := !p.r.rolling[p.nsName()]
	p.r.rolling[p.nsName()] = true
	p.r.mu.Unlock()
	if started {
		p.event(corev1.EventTypeNormal, eventRollingUpdateStarted, "rolling members to the latched template, one at a time: "+a.Message)
	}
	note := fmt.Sprintf("restarting %s (%s) with template %s: %s", m.Name, etcdclient.FormatID(a.MemberID), a.Hash, a.Message)
	p.memberEvent(m, corev1.EventTypeNormal, eventMemberUpdated, note)
	if a.Gate != nil && a.Gate.Disruptive {
		p.memberEvent(m, corev1.EventTypeWarning, eventRollingUpdateDisruptive,
			fmt.Sprintf("%s is the only voter: the cluster is unavailable while it restarts with template %s", m.Name, a.Hash))
	}
	return nil
}

// recordHash authorises the hash of m's template on m itself, for a member whose Pod is built
// from that template next (a new member, a woken one): its Pod then carries the authorised hash
// from the start, and the roll has nothing to record later.
func (p *pass) recordHash(m *etcdv1alpha2.EtcdMember) {
	h := p.templateHash(&m.Spec)
	if h == "" {
		return
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[etcdv1alpha2.AnnotationTemplateHash] = h
}

// rolling reports whether this process started a roll of the cluster that has not converged.
func (p *pass) rolling() bool {
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	return p.r.rolling[p.nsName()]
}

// rollCompleted announces, once, that a cluster this process rolled has converged. Events are
// an audit trail, not state: an operator restarted mid-roll announces no completion.
func (p *pass) rollCompleted() {
	p.r.mu.Lock()
	was := p.r.rolling[p.nsName()]
	delete(p.r.rolling, p.nsName())
	p.r.mu.Unlock()
	if was {
		p.event(corev1.EventTypeNormal, eventRollingUpdateCompleted,
			fmt.Sprintf("every member runs the latched template (%d members updated)", p.cluster.Status.UpdatedMembers))
	}
}
