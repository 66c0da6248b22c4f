package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// eventMemberReadopted is the Event of a finished re-adoption.
const eventMemberReadopted = "MemberReadopted"

// readopt re-creates the EtcdMember of an orphan PVC under its old name, prefills its member ID,
// and makes the PVC its own by rewriting member-uid (docs/design/healing.md, re-adoption). Each
// write is skipped when a previous pass made it, so a crash between any two is finished by the
// next pass; until the PVC names the new member, the EtcdMember controller only waits (it neither
// starts a Pod on data it does not own nor refuses data its predecessor left).
func (x *executor) readopt(ctx context.Context, a membership.Action) (step.Result, error) {
	pvc, err := x.pvc(a.PVC)
	if err != nil {
		return step.Result{}, err
	}
	var m *etcdv1alpha2.EtcdMember
	if a.Readopt.Create {
		m = readoptedMember(x.cluster(), a, x.obs.claimOf(a.Member))
		if err := x.client.Create(ctx, m); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// The explicit name is the dedupe: a stale cache that missed a member created by a
				// previous pass meets AlreadyExists here and waits for the cache.
				return step.Requeue(nextStepDelay, "EtcdMember "+a.Member+" exists already; waiting for the cache to show it"), nil
			}
			return step.Result{}, fmt.Errorf("re-creating EtcdMember %s for PVC %s: %w", a.Member, a.PVC, err)
		}
		failpoint.Inject(ctx, failpoint.MemberReadopted)
	} else if m, err = x.member(a.Member); err != nil {
		return step.Result{}, err
	}
	if a.MemberID != 0 {
		// The member's status then names its etcd identity from the start, as etcd's member list
		// does (the member status sync would write it next pass anyway).
		wrote, err := x.patchMemberStatus(ctx, m, etcdclient.FormatID(a.MemberID), a.Readopt.Voter, m.Status.Version)
		if err != nil {
			return step.Result{}, err
		}
		if wrote {
			failpoint.Inject(ctx, failpoint.ReadoptedMemberIDSet)
		}
	}
	old := pvc.Annotations[etcdv1alpha2.AnnotationMemberUID]
	if old == string(m.UID) {
		return step.Continue, nil
	}
	before := pvc.DeepCopy()
	if pvc.Annotations == nil {
		pvc.Annotations = map[string]string{}
	}
	pvc.Annotations[etcdv1alpha2.AnnotationMemberUID] = string(m.UID)
	// The optimistic lock makes the rewrite conditional on the member-uid read this pass: a PVC
	// changed meanwhile (deleted and re-made, given to someone else) is looked at again.
	if err := x.client.Patch(ctx, pvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return step.Result{}, fmt.Errorf("giving PVC %s to re-adopted EtcdMember %s: %w", pvc.Name, m.Name, err)
	}
	failpoint.Inject(ctx, failpoint.PVCReadopted)
	id := "its etcd member ID unknown until etcd answers"
	if a.MemberID != 0 {
		id = "etcd member " + etcdclient.FormatID(a.MemberID)
	}
	x.memberEvent(m, corev1.EventTypeNormal, eventMemberReadopted,
		fmt.Sprintf("re-adopted PVC %s as member %s (%s; the PVC belonged to EtcdMember UID %s)", pvc.Name, m.Name, id, old))
	return step.Continue, nil
}
