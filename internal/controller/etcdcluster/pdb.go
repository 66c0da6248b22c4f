package etcdcluster

import (
	"context"
	"fmt"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/desired"
)

// applyPDB creates, updates or deletes the cluster's PodDisruptionBudget for the given voters
// and target (docs/design/quorum.md, "PDB arithmetic"): minAvailable = q(max(voters, target)), deleted with no voters.
// It runs on every pass, bootstrap included.
func (x *executor) applyPDB(ctx context.Context, voters, target int32) error {
	want := desired.PDB(x.cluster(), voters, target)
	have := &policyv1.PodDisruptionBudget{}
	key := client.ObjectKey{Namespace: x.cluster().Namespace, Name: desired.PDBName(x.cluster().Name)}
	err := x.client.Get(ctx, key, have)
	switch {
	case apierrors.IsNotFound(err):
		if want == nil {
			return nil
		}
		if err := x.client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating PodDisruptionBudget %s: %w", key.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading PodDisruptionBudget %s: %w", key.Name, err)
	case want == nil:
		if err := x.client.Delete(ctx, have, client.Preconditions{UID: &have.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting PodDisruptionBudget %s: %w", key.Name, err)
		}
		return nil
	}
	next := pdbUpdate(have, want)
	if next == nil {
		return nil
	}
	if err := x.client.Patch(ctx, next, client.MergeFrom(have)); err != nil {
		return fmt.Errorf("updating PodDisruptionBudget %s: %w", key.Name, err)
	}
	return nil
}

// pdbUpdate returns have with the operator's fields set as in want, or nil when nothing changes.
func pdbUpdate(have, want *policyv1.PodDisruptionBudget) *policyv1.PodDisruptionBudget {
	next := have.DeepCopy()
	mergeOwnedMetadata(&next.Labels, want.Labels, have.Labels)
	mergeOwnedMetadata(&next.Annotations, want.Annotations, have.Annotations)
	next.Spec = want.Spec
	next.OwnerReferences = want.OwnerReferences
	if equality.Semantic.DeepEqual(next, have) {
		return nil
	}
	return next
}
