package phase

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/operator"
)

// Operator is what etcd-migrate needs of this project's operator: its image (the snapshot
// agent's, and the data-dir guard's, which enters the template hash) and its etcd image
// repository. Found says the Deployment exists.
type Operator struct {
	Found               bool
	Image, GuardImage   string
	EtcdImageRepository string
}

// ReadOperator reads --new-controller's Deployment ref ("namespace/name").
func ReadOperator(ctx context.Context, r client.Reader, ref string) (Operator, error) {
	ns, name, _ := strings.Cut(ref, "/")
	dep := &appsv1.Deployment{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return Operator{}, nil
		}
		return Operator{}, fmt.Errorf("reading the operator Deployment %s: %w", ref, err)
	}
	cs := dep.Spec.Template.Spec.Containers
	if len(cs) == 0 {
		return Operator{}, fmt.Errorf("the operator Deployment %s has no container", ref)
	}
	op := Operator{Found: true, Image: cs[0].Image}
	flags := legacy.ParseFlags(append(append([]string{}, cs[0].Command...), cs[0].Args...))
	op.EtcdImageRepository = flags[operator.FlagEtcdImageRepository]
	op.GuardImage = op.Image
	if g := flags[operator.FlagDataGuardImage]; g != "" {
		op.GuardImage = g
	}
	return op, nil
}
