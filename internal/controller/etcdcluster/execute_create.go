package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// createMember creates a pending EtcdMember, the seed (KindCreateSeed) or a new member of a
// scale-up (KindCreateMember), with GenerateName. The API server's name generation is the only
// dedupe a stale cache cannot break, so an uncached list must first confirm that the cache
// missed no member (docs/design/house-rules.md, trust observation).
func (x *executor) createMember(ctx context.Context, a membership.Action) (step.Result, error) {
	c := x.cluster()
	var list etcdv1alpha2.EtcdMemberList
	if err := x.apiReader.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingLabels{etcdv1alpha2.LabelCluster: c.Name}); err != nil {
		return step.Result{}, fmt.Errorf("listing EtcdMembers uncached before creating one: %w", err)
	}
	fresh := ownedMembers(c, list.Items)
	if len(fresh) != len(x.obs.members) {
		return step.Requeue(nextStepDelay, fmt.Sprintf("the cache holds %d EtcdMembers, the API server %d", len(x.obs.members), len(fresh))), nil
	}
	for i := range fresh {
		if fresh[i].Spec.InitialCluster == "" && !fresh[i].Spec.Dormant {
			return step.Requeue(nextStepDelay, "EtcdMember "+fresh[i].Name+" is still pending"), nil
		}
	}
	seed := a.Kind == membership.KindCreateSeed
	m := newMember(c, seed, x.obs.templateHash)
	if err := x.client.Create(ctx, m); err != nil {
		return step.Result{}, fmt.Errorf("creating an EtcdMember: %w", err)
	}
	if seed {
		failpoint.Inject(ctx, failpoint.SeedCreated)
		x.memberEvent(m, corev1.EventTypeNormal, eventSeedCreated, "created seed member "+m.Name)
		return step.Continue, nil
	}
	failpoint.Inject(ctx, failpoint.MemberCreated)
	x.memberEvent(m, corev1.EventTypeNormal, eventMemberCreated, "created member "+m.Name)
	return step.Continue, nil
}
