package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// eventMemberReadopted is the Event of a finished re-adoption (behaviour.md §23).
const eventMemberReadopted = "MemberReadopted"

// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=patch

// readopt re-creates the EtcdMember of an orphan PVC under its old name, prefills its member ID,
// and makes the PVC its own by rewriting member-uid (behaviour.md §10). Each write is skipped
// when a previous pass made it, so a crash between any two is finished by the next pass; until
// the PVC names the new member, the EtcdMember controller only waits (it neither starts a Pod
// on data it does not own nor refuses data its predecessor left).
func (p *pass) readopt(ctx context.Context, a membership.Action) error {
	pvc, err := p.pvc(a.PVC)
	if err != nil {
		return err
	}
	var m *etcdv1alpha2.EtcdMember
	if a.Readopt.Create {
		if m, err = p.createReadopted(ctx, a); err != nil {
			return err
		}
		failpoint.Inject(failpoint.MemberReadopted)
	} else if m, err = p.member(a.Member); err != nil {
		return err
	}
	if a.MemberID != 0 {
		// The member's status then names its etcd identity from the start, as etcd's member
		// list does (the member status step would write it next pass anyway).
		wrote, err := p.patchMemberStatus(ctx, m, etcdclient.FormatID(a.MemberID), a.Readopt.Voter, m.Status.Version)
		if err != nil {
			return err
		}
		if wrote {
			failpoint.Inject(failpoint.ReadoptedMemberIDSet)
		}
	}
	old := pvc.Annotations[etcdv1alpha2.AnnotationMemberUID]
	if old == string(m.UID) {
		return nil
	}
	before := pvc.DeepCopy()
	if pvc.Annotations == nil {
		pvc.Annotations = map[string]string{}
	}
	pvc.Annotations[etcdv1alpha2.AnnotationMemberUID] = string(m.UID)
	// The optimistic lock makes the rewrite conditional on the member-uid read this pass: a PVC
	// changed meanwhile (deleted and re-made, given to someone else) is looked at again.
	if err := p.r.client.Patch(ctx, pvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("giving PVC %s to re-adopted EtcdMember %s: %w", pvc.Name, m.Name, err)
	}
	failpoint.Inject(failpoint.PVCReadopted)
	id := "its etcd member ID unknown until etcd answers"
	if a.MemberID != 0 {
		id = "etcd member " + etcdclient.FormatID(a.MemberID)
	}
	p.memberEvent(m, corev1.EventTypeNormal, eventMemberReadopted,
		fmt.Sprintf("re-adopted PVC %s as member %s (%s; the PVC belonged to EtcdMember UID %s)", pvc.Name, m.Name, id, old))
	return nil
}

// createReadopted creates the EtcdMember named a.Member. The explicit name is the dedupe: a
// stale cache that missed a member created by a previous pass meets AlreadyExists here and waits
// for the cache, instead of creating a second one.
func (p *pass) createReadopted(ctx context.Context, a membership.Action) (*etcdv1alpha2.EtcdMember, error) {
	c := p.cluster
	m := &etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{
			Name:            a.Member,
			Namespace:       c.Namespace,
			Labels:          desired.MemberLabels(c.Name, a.Member),
			OwnerReferences: []metav1.OwnerReference{newController(c)},
		},
		Spec: etcdv1alpha2.EtcdMemberSpec{
			ClusterName:  c.Name,
			ClusterToken: c.Status.ClusterToken,
			TLS:          memberTLS(c),
			// etcd ignores --initial-cluster once its data directory holds a member; the
			// member controller only builds a Pod for a member that has one.
			InitialCluster: a.InitialCluster,
			Dormant:        a.Readopt.Dormant,
		},
	}
	// The size its PVC provides, not the latched one its volume may not have grown to.
	membership.ApplyTemplate(&m.Spec, membership.MemberTarget(c.Status.Observed, nil, p.claimOf(a.Member)))
	if err := p.r.client.Create(ctx, m); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, &errWaiting{after: nextStepDelay, msg: "EtcdMember " + a.Member + " exists already; waiting for the cache to show it"}
		}
		return nil, fmt.Errorf("re-creating EtcdMember %s for PVC %s: %w", a.Member, a.PVC, err)
	}
	return m, nil
}

// pvc returns the pass's PVC named name.
func (p *pass) pvc(name string) (*corev1.PersistentVolumeClaim, error) {
	for i := range p.pvcs {
		if p.pvcs[i].Name == name {
			return &p.pvcs[i], nil
		}
	}
	return nil, fmt.Errorf("PVC %s is not in this pass's scope", name)
}

// readoptView fills the facts re-adoption needs of a PVC: whether its member was re-created
// under its name, the peer URL a member re-created for it would advertise, and whether it holds
// another cluster's data. A PVC
// controlled by something other than this cluster, or older than the cluster (kept by
// reclaimPolicy Retain from an earlier cluster of the same name, or adopted from another
// operator with members this one cannot re-create faithfully), is foreign.
func (p *pass) readoptView(v *membership.PVC, pvc *corev1.PersistentVolumeClaim) {
	c := p.cluster
	for i := range p.members {
		if m := &p.members[i]; m.Name == v.Member {
			v.MemberRecreated = m.GenerateName == ""
		}
	}
	stub := &etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Name: v.Member, Namespace: c.Namespace},
		Spec:       etcdv1alpha2.EtcdMemberSpec{ClusterName: c.Name, TLS: memberTLS(c)},
	}
	v.PeerURL = desired.PeerURL(stub)
	ref := metav1.GetControllerOf(pvc)
	v.Foreign = (ref != nil && ref.UID != c.UID) || pvc.CreationTimestamp.Before(&c.CreationTimestamp)
}
