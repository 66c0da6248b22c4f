package etcdmember

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
)

// restartDecision says whether the member's Pod is restarted for a new template, and why.
type restartDecision struct {
	restart bool
	// why is the reason for the Event and log when restart is true; otherwise, when not
	// empty, what holds an authorised restart back.
	why string
}

// decideRestart is the rolling update's Pod decision (docs/design/rolling-updates.md, "Restarts in
// the member controller"), pure: a PVC member's running Pod is deleted, to be recreated on the same
// PVC with --initial-cluster-state=existing, only when the EtcdCluster controller authorised a
// template hash for the member (the template-hash annotation), the Pod carries another one, and the
// Pod this controller would build now carries exactly the authorised one (built). The last check
// keeps the two controllers from restarting a member in a loop when they disagree about a hash
// input (an operator upgrade running two image repositories, a CA rotated between the two reads):
// the restart waits until they agree. A Memory member is never restarted: its data would go with
// the Pod; the cluster controller replaces it instead.
func decideRestart(m *etcdv1alpha2.EtcdMember, pod *corev1.Pod, built string) restartDecision {
	authorised := m.Annotations[etcdv1alpha2.AnnotationTemplateHash]
	running := pod.Annotations[etcdv1alpha2.AnnotationTemplateHash]
	switch {
	case authorised == "" || running == authorised || !pod.DeletionTimestamp.IsZero():
		return restartDecision{}
	case m.Spec.Storage.Medium == etcdv1alpha2.StorageMediumMemory:
		return restartDecision{}
	case built != authorised:
		return restartDecision{why: fmt.Sprintf("template %s is authorised, but a Pod built now would carry template %s; the Pod is restarted once they agree", authorised, built)}
	}
	return restartDecision{restart: true,
		why: fmt.Sprintf("rolling update: the Pod runs template %s, template %s is authorised; it is recreated on PVC %s with the same member identity", running, authorised, desired.PVCName(m.Name))}
}

// templateRestart computes the hash a Pod built now would carry (only when the Pod's hash
// differs from the authorised one: the CA digests cost a Secret read) and decides. What holds a
// restart back is noted for the Updated condition.
func (r *Reconciler) templateRestart(ctx context.Context, sc *scope) (restartDecision, error) {
	m, pod := sc.member, sc.pod
	authorised := m.Annotations[etcdv1alpha2.AnnotationTemplateHash]
	if authorised == "" || pod.Annotations[etcdv1alpha2.AnnotationTemplateHash] == authorised {
		return restartDecision{}, nil
	}
	ca, missing, err := r.caDigests(ctx, m)
	if err != nil {
		return restartDecision{}, err
	}
	if missing != "" {
		sc.notes.restartHeld = "the restart waits for TLS Secret " + missing
		return restartDecision{}, nil
	}
	d := decideRestart(m, pod, desired.TemplateHash(&m.Spec, r.images(m.Spec.Version), ca))
	if !d.restart {
		sc.notes.restartHeld = d.why
	}
	return d, nil
}
