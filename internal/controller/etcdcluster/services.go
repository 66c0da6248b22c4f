package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// ensureServices creates the headless and client Services, and keeps the fields the operator
// owns (labels, annotations, type, selector, ports) as desired renders them, in place. Fields the
// API server or other controllers fill (clusterIP, nodePorts) are left alone. Unchanged
// Services are not written.
func (x *executor) ensureServices(ctx context.Context) (step.Result, error) {
	headless, clientSvc := desired.Services(x.cluster())
	for _, want := range []*corev1.Service{headless, clientSvc} {
		if err := x.ensureService(ctx, want); err != nil {
			return step.Result{}, err
		}
	}
	return step.Continue, nil
}

func (x *executor) ensureService(ctx context.Context, want *corev1.Service) error {
	have := &corev1.Service{}
	err := x.client.Get(ctx, client.ObjectKeyFromObject(want), have)
	if apierrors.IsNotFound(err) {
		if err := x.client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Service %s: %w", want.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Service %s: %w", want.Name, err)
	}
	next := serviceUpdate(have, want)
	if next == nil {
		return nil
	}
	if err := x.client.Patch(ctx, next, client.MergeFrom(have)); err != nil {
		return fmt.Errorf("updating Service %s: %w", want.Name, err)
	}
	return nil
}

// serviceUpdate returns have with the fields the operator owns set as in want, or nil when
// nothing changes.
func serviceUpdate(have, want *corev1.Service) *corev1.Service {
	next := have.DeepCopy()
	mergeOwnedMetadata(&next.Labels, want.Labels, have.Labels)
	mergeOwnedMetadata(&next.Annotations, want.Annotations, have.Annotations)
	next.Spec.Selector = want.Spec.Selector
	next.Spec.Type = want.Spec.Type
	next.Spec.PublishNotReadyAddresses = want.Spec.PublishNotReadyAddresses
	next.Spec.Ports = mergePorts(want.Spec.Ports, have.Spec.Ports)
	next.OwnerReferences = want.OwnerReferences
	if equality.Semantic.DeepEqual(next, have) {
		return nil
	}
	return next
}

// mergePorts keeps the node ports the API server allocated for ports that stay.
func mergePorts(want, have []corev1.ServicePort) []corev1.ServicePort {
	out := make([]corev1.ServicePort, 0, len(want))
	for _, w := range want {
		for _, h := range have {
			if h.Name == w.Name && h.Port == w.Port {
				w.NodePort = h.NodePort
			}
		}
		out = append(out, w)
	}
	return out
}

// mergeOwnedMetadata sets *dst to want's keys plus the keys of have that neither the operator
// nor the user's additionalMetadata owns. It cannot tell a key the user removed from
// additionalMetadata from a foreign one; those are removed only by server-side apply (later).
func mergeOwnedMetadata(dst *map[string]string, want, have map[string]string) {
	out := map[string]string{}
	for k, v := range have {
		out[k] = v
	}
	for k, v := range want {
		out[k] = v
	}
	if len(out) == 0 {
		*dst = nil
		return
	}
	*dst = out
}
