package etcdcluster

import (
	"context"
	"slices"

	"github.com/etcd-operator/etcd-operator/internal/step"
)

// syncInPlaceTemplate gives the plan's members the in-place part of the latched template:
// additionalMetadata and imagePullSecrets. Neither restarts etcd (the member controller merges
// metadata onto the Pod and PVC in place and uses pull Secrets at the next Pod creation), so
// they need no roll and no lock step (docs/design/rolling-updates.md, in-place fields).
func (x *executor) syncInPlaceTemplate(ctx context.Context) (step.Result, error) {
	o := x.cluster().Status.Observed
	for _, name := range x.plan.InPlace {
		m, err := x.member(name)
		if err != nil {
			return step.Result{}, err
		}
		before := m.DeepCopy()
		m.Spec.AdditionalMetadata = o.AdditionalMetadata.DeepCopy()
		m.Spec.ImagePullSecrets = slices.Clone(o.ImagePullSecrets)
		if err := x.patchMember(ctx, m, before, "updating the in-place template of"); err != nil {
			return step.Result{}, err
		}
	}
	return step.Continue, nil
}
