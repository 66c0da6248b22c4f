package etcdcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/pki"
)

// Event reasons of a managed CA's rotation (docs/design/conditions-and-events.md).
const (
	eventCARotationStarted        = "CARotationStarted"
	eventCARotationLeavesReissued = "CARotationLeavesReissued"
	eventCARotationCompleted      = "CARotationCompleted"
)

// rotateCA takes one step of a CA's rotation (docs/tls.md, "CA rotation"): the CA Secret as
// stored at the version the plan was made on, changed as pki.RenderCAUpdate says, written back
// under an optimistic lock in one patch, data and records together.
func (x *executor) rotateCA(ctx context.Context, w pki.Write) error {
	old, err := x.secretAt(ctx, w.Secret, w.Version, "the CA changed since the pass planned its rotation")
	if err != nil {
		return err
	}
	st, err := pki.RenderCAUpdate(w, storedOf(old), x.obs.now)
	if err != nil {
		return fmt.Errorf("rotating the CA in Secret %s: %w", w.Secret, err)
	}
	s := old.DeepCopy()
	s.Data = st.Data
	setRotationRecords(s, st)
	if err := x.client.Patch(ctx, s, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("rotating the CA in Secret %s: %w", w.Secret, err)
	}
	logf.FromContext(ctx).Info("Took a step of a CA rotation", "secret", w.Secret, "step", w.Step.String(), "reason", w.Reason)
	switch w.Step {
	case pki.CAStepImport:
		x.event(corev1.EventTypeNormal, eventCARotationStarted, fmt.Sprintf("moving to managed TLS: the bundle of Secret %s trusts the CA of the "+
			"certificates you brought beside the operator's; members restart one at a time onto the managed Secrets (%s)", w.Secret, w.Reason))
	case pki.CAStepStage:
		x.event(corev1.EventTypeNormal, eventCARotationStarted, fmt.Sprintf("issued a new CA into Secret %s and added it to the bundle beside "+
			"the current one; members restart one at a time to trust both (%s)", w.Secret, w.Reason))
	case pki.CAStepMark:
		x.event(corev1.EventTypeNormal, eventCARotationLeavesReissued, fmt.Sprintf("every certificate of Secret %s's CA is signed by the new CA; "+
			"the old CA leaves the bundle once the kubelet refreshed the certificates every member mounts", w.Secret))
	case pki.CAStepDrop:
		x.event(corev1.EventTypeNormal, eventCARotationCompleted, fmt.Sprintf("dropped the old CA from the bundle of Secret %s; "+
			"members restart one at a time to trust the new CA alone", w.Secret))
	case pki.CAStepPromote:
		// The switch of the signing CA is told by the certificates it issues next
		// (CertificateRenewed) and by CARotationLeavesReissued when they are all done.
	}
	return nil
}

// storedOf is what a managed Secret holds, as the pki package reads it.
func storedOf(s *corev1.Secret) pki.Stored {
	st := pki.Stored{Data: s.Data, Token: s.Annotations[etcdv1alpha2.AnnotationRotateCAHandled]}
	if at := s.Annotations[etcdv1alpha2.AnnotationCALeavesReissuedAt]; at != "" {
		st.ReissuedAt, _ = time.Parse(time.RFC3339, at) // unreadable: no mark, written again
	}
	return st
}

// setRotationRecords writes a CA Secret's rotation records into its annotations.
func setRotationRecords(s *corev1.Secret, st pki.Stored) {
	set := func(key, value string) {
		switch {
		case value != "":
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations[key] = value
		case s.Annotations != nil:
			delete(s.Annotations, key)
		}
	}
	set(etcdv1alpha2.AnnotationRotateCAHandled, st.Token)
	at := ""
	if !st.ReissuedAt.IsZero() {
		at = st.ReissuedAt.UTC().Format(time.RFC3339)
	}
	set(etcdv1alpha2.AnnotationCALeavesReissuedAt, at)
}
