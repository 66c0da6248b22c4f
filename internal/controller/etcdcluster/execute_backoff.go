package etcdcluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// eventReplacementBackoff announces a new back-off before a member that never started is
// replaced.
const eventReplacementBackoff = "ReplacementBackoff"

// backoff records the back-off before a member that never started is replaced (written by the
// pass's status patch) and announces it once: each new back-off is a new member failing
// (docs/design/healing.md, back-off).
func (x *executor) backoff(_ context.Context, a membership.Action) (step.Result, error) {
	x.effects.backoff = &etcdv1alpha2.ReplacementBackoff{Attempts: a.Backoff.Attempts, NotBefore: metav1.NewTime(a.Backoff.NotBefore)}
	x.event(corev1.EventTypeWarning, eventReplacementBackoff, a.Message)
	return step.Requeue(a.RequeueAfter, membership.ReasonReplacementBackoff), nil
}
