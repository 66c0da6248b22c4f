package membership

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// DefaultProgressDeadlineSeconds is spec.progressDeadlineSeconds' default (docs/api.md, "Minimal cluster").
const DefaultProgressDeadlineSeconds int32 = 600

// Adoption reasons of the Progressing condition (docs/design/membership-flows.md, "Latched target").
const (
	ReasonInitialSnapshot    = "InitialSnapshot"
	ReasonSpecChanged        = "SpecChanged"
	ReasonRetryAfterDeadline = "RetryAfterDeadline"
	ReasonDeadlineExceeded   = "DeadlineExceeded"
	ReasonBootstrapStalled   = "BootstrapStalled"
	// ReasonVersionChangeRejected: the version check (docs/design/versions.md) refused the spec, which
	// is therefore not adopted.
	ReasonVersionChangeRejected = "VersionChangeRejected"
)

// ObservedFromSpec is the part of spec the controller latches into status.observed: everything
// but TLS, auth, bootstrap, progressDeadlineSeconds, clientService and storage.reclaimPolicy.
func ObservedFromSpec(spec *etcdv1alpha2.EtcdClusterSpec) *etcdv1alpha2.ObservedClusterSpec {
	st := *spec.Storage.DeepCopy()
	st.ReclaimPolicy = ""
	o := &etcdv1alpha2.ObservedClusterSpec{
		Replicas:                  ptr.Deref(spec.Replicas, 3),
		Version:                   spec.Version,
		Storage:                   st,
		Resources:                 *spec.Resources.DeepCopy(),
		AdditionalMetadata:        spec.AdditionalMetadata.DeepCopy(),
		Options:                   spec.Options.DeepCopy(),
		NodeSelector:              spec.NodeSelector,
		PriorityClassName:         spec.PriorityClassName,
		PodSecurityContext:        spec.PodSecurityContext.DeepCopy(),
		Affinity:                  spec.Affinity.DeepCopy(),
		TopologySpreadConstraints: spec.TopologySpreadConstraints,
		ImagePullSecrets:          spec.ImagePullSecrets,
		Tolerations:               spec.Tolerations,
	}
	return o.DeepCopy()
}

// ApplyTemplate writes the member template of observed onto a member's spec: the fields every
// member copies from the latched target (docs/api.md, "EtcdMember spec"). Identity fields (clusterName,
// initialCluster, token, bootstrap, dormant, tls, restore) are left alone.
func ApplyTemplate(spec *etcdv1alpha2.EtcdMemberSpec, observed *etcdv1alpha2.ObservedClusterSpec) {
	o := observed.DeepCopy()
	spec.Version = o.Version
	o.Storage.ReclaimPolicy = spec.Storage.ReclaimPolicy // not latched; see SameTarget
	spec.Storage = o.Storage
	spec.Resources = o.Resources
	spec.Affinity = o.Affinity
	spec.TopologySpreadConstraints = o.TopologySpreadConstraints
	spec.Options = o.Options
	spec.ImagePullSecrets = o.ImagePullSecrets
	spec.AdditionalMetadata = o.AdditionalMetadata
	spec.NodeSelector = o.NodeSelector
	spec.Tolerations = o.Tolerations
	spec.PriorityClassName = o.PriorityClassName
	spec.PodSecurityContext = o.PodSecurityContext
	if spec.Replicas == 0 {
		spec.Replicas = 1
	}
}

// TemplateCurrent reports whether a member's template equals observed's.
func TemplateCurrent(spec *etcdv1alpha2.EtcdMemberSpec, observed *etcdv1alpha2.ObservedClusterSpec) bool {
	if observed == nil {
		return false
	}
	want := spec.DeepCopy()
	ApplyTemplate(want, observed)
	want.Replicas = spec.Replicas
	return equality.Semantic.DeepEqual(want, spec)

}

// Converged reports whether the cluster has reached its latched target (docs/design/membership-flows.md, "Latched target"):
// cluster ID latched (or target 0), running = target, no pending member, no learner, no member
// being removed, every running member Ready, on the latched template with its hash authorised,
// and its Pod running that template, and no member PVC still growing (docs/design/storage.md).
// A paused target with no running member counts as converged.
func Converged(s *Scope) bool {
	if s.ClusterID == "" && s.Target != 0 {
		return false
	}
	running := s.Running()
	if len(running) != int(s.Target) || len(s.Learners()) > 0 {
		return false
	}
	for _, m := range s.Members {
		if m.Leaving() {
			return false
		}
	}
	for _, m := range running {
		if m.Pending || !m.Ready || !m.current() {
			return false
		}
	}
	// PVC sizes satisfied or expansion unsupported: a cluster whose volumes cannot grow has
	// done what it can (new members get the size), one whose volumes are growing has not.
	return !PlanStorage(s).expanding()
}

// LockInput is what the lock decides over.
type LockInput struct {
	// Spec is the cluster's spec; Generation its metadata.generation.
	Spec       *etcdv1alpha2.EtcdClusterSpec
	Generation int64
	// Observed, ObservedGeneration and Deadline are the current status fields.
	Observed           *etcdv1alpha2.ObservedClusterSpec
	ObservedGeneration int64
	Deadline           *metav1.Time
	// Converged is Converged over the current observed target.
	Converged bool
	// Now is the clock reading of the pass.
	Now time.Time
	// VersionRejected is the version check's refusal of spec.version against the running
	// versions (docs/design/versions.md), empty when it allows it. A refused spec is never adopted.
	VersionRejected string
}

// Lock is the lock's decision for one pass.
type Lock struct {
	// Observed, ObservedGeneration and Deadline are the status fields to write.
	Observed           *etcdv1alpha2.ObservedClusterSpec
	ObservedGeneration int64
	Deadline           *metav1.Time
	// Adopted is true when this pass latched a different target; AdoptReason says why.
	Adopted     bool
	AdoptReason string
	// Expired is true when the deadline passed without convergence and there was nothing new
	// to adopt: Progressing=False/DeadlineExceeded (BootstrapStalled before the cluster ID).
	Expired bool
	// Pending is true while a newer generation waits for the current target; PendingMessage
	// says when it will be adopted.
	Pending        bool
	PendingMessage string
	// Rejected is the version check's refusal of a spec this pass would otherwise have adopted:
	// Progressing=False/VersionChangeRejected. The check runs again every pass, so a corrected
	// spec is adopted by the next one.
	Rejected string
}

// Decide applies the locking pattern of docs/design/membership-flows.md, "Latched target": adopt the spec on the first pass, when
// converged, or when the deadline expired; arm the deadline whenever not converged; clear it when
// converged. A paused target counts as converged once nothing runs.
func Decide(in LockInput) Lock {
	want := ObservedFromSpec(in.Spec)
	l := Lock{Observed: in.Observed, ObservedGeneration: in.ObservedGeneration, Deadline: in.Deadline}
	same := in.Observed != nil && SameTarget(want, in.Observed)
	expired := !in.Converged && in.Deadline != nil && !in.Now.Before(in.Deadline.Time)
	switch {
	case in.Observed == nil:
		l.Adopted, l.AdoptReason = true, ReasonInitialSnapshot
	case same:
		// Nothing latched differs (e.g. only clientService changed): the generation is applied
		// as far as the target is concerned.
		l.ObservedGeneration = in.Generation
	case in.Converged:
		l.Adopted, l.AdoptReason = true, ReasonSpecChanged
	case expired:
		l.Adopted, l.AdoptReason = true, ReasonRetryAfterDeadline
	}
	if l.Adopted && in.VersionRejected != "" {
		// Only a spec that would be adopted is refused: a spec waiting for convergence is still
		// pending, and is checked against what runs when its turn comes.
		l.Adopted, l.AdoptReason, l.Rejected = false, "", in.VersionRejected
	}
	if l.Adopted {
		l.Observed, l.ObservedGeneration = want, in.Generation
		l.Deadline = deadline(in)
		return l
	}
	switch {
	case in.Converged || in.Observed == nil:
		// Nothing latched (a first spec refused) is nothing to make progress towards.
		l.Deadline = nil
	case in.Deadline == nil:
		l.Deadline = deadline(in)
	case expired:
		l.Expired = true
	}
	if in.Generation > l.ObservedGeneration && l.Rejected == "" {
		l.Pending = true
		when := "when it expires"
		if l.Deadline != nil {
			when = "at " + l.Deadline.UTC().Format(time.RFC3339)
		}
		l.PendingMessage = fmt.Sprintf("generation %d pending; adopted when generation %d converges or %s",
			in.Generation, l.ObservedGeneration, when)
	}
	return l
}

// SameTarget compares two latched targets, ignoring storage.reclaimPolicy: it is not latched,
// but the API server defaults it inside status.observed too (the type is shared with spec).
func SameTarget(a, b *etcdv1alpha2.ObservedClusterSpec) bool {
	x, y := a.DeepCopy(), b.DeepCopy()
	x.Storage.ReclaimPolicy, y.Storage.ReclaimPolicy = "", ""
	return equality.Semantic.DeepEqual(x, y)
}

func deadline(in LockInput) *metav1.Time {
	secs := ptr.Deref(in.Spec.ProgressDeadlineSeconds, DefaultProgressDeadlineSeconds)
	t := metav1.NewTime(in.Now.Add(time.Duration(secs) * time.Second).Truncate(time.Second))
	return &t
}
