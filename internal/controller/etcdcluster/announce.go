package etcdcluster

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/step"
)

// Event reasons of the lock's decisions (docs/design/conditions-and-events.md).
const (
	eventSpecChangePending     = "SpecChangePending"
	eventVersionChangeRejected = "VersionChangeRejected"
	eventDeadlineExceeded      = "DeadlineExceeded"
)

// announce sends the Warnings the lock's decision calls for, each once per distinct value: a
// spec refused by the version rules (the message names the target, what runs and what is
// allowed, so a new message means something changed), and a newer generation that waits for
// the current target. An adoption re-arms the refusal's Warning: the same refusal later is a new
// mistake worth announcing.
func (x *executor) announce(context.Context) (step.Result, error) {
	l := x.plan.Lock
	switch {
	case l.Rejected != "":
		if x.memory.warnOnce(x.key(), warnVersionRejected, l.Rejected) {
			x.event(corev1.EventTypeWarning, eventVersionChangeRejected, l.Rejected)
		}
	case l.Adopted:
		x.memory.rearm(x.key(), warnVersionRejected)
	}
	if l.Pending && x.memory.warnOnce(x.key(), warnSpecPending, strconv.FormatInt(x.cluster().Generation, 10)) {
		x.event(corev1.EventTypeWarning, eventSpecChangePending, l.PendingMessage)
	}
	return step.Continue, nil
}

// stopAfterAdoption ends a pass whose lock adopted a new target before anything acts on it
// (docs/design/membership-flows.md, locking pattern): the pass's status patch makes the adoption
// durable (observed, observedGeneration, progressDeadline and the Progressing condition naming
// it), and the next pass acts on the target it reads back. Acting now would leave the adoption in
// memory until that patch: a crash after the action (a removal-reason annotation, a MemberRemove,
// a create) would lose it while the action persisted, and the restarted operator, finding a world
// no longer converged, would finish the action and then drive the cluster back to the old target.
func (x *executor) stopAfterAdoption(context.Context) (step.Result, error) {
	if !x.plan.Lock.Adopted {
		return step.Continue, nil
	}
	return step.Requeue(nextStepDelay, "adopted generation "+strconv.FormatInt(x.plan.Lock.ObservedGeneration, 10)), nil
}
