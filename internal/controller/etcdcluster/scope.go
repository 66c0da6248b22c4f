package etcdcluster

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/podstate"
)

// scopeFor projects the observation for the planner under latched target observed
// (status.observed, or the target an adoption latches): every member's template is judged, and
// its template hash computed, against that target, once. It is pure.
func (o *observation) scopeFor(observed *etcdv1alpha2.ObservedClusterSpec) membership.Scope {
	c := o.cluster
	s := membership.Scope{
		ClusterID:            c.Status.ClusterID,
		Etcd:                 o.etcd,
		Now:                  o.now,
		OrphanMemberGrace:    o.config.orphanGrace,
		StrictReconfigSettle: o.config.settles.strictReconfig,
		RollSettle:           o.config.settles.roll,
		Bootstrapping:        bootstrapping(c),
		Rolling:              o.rolling,
		TLS:                  o.tls,
		Access:               o.accessScope(),
		Observed:             observed,
		DefragRunning:        o.defrags,
		StorageSize:          latchedSize(observed),
		// The guard holds a staged member's etcd until its add; without it, etcd would start
		// on a membership that does not list it and exit.
		Staging: o.config.guardImage != "" && (observed == nil || observed.Storage.Medium != etcdv1alpha2.StorageMediumMemory),
	}
	s.Stranded, s.Recovery = o.stranded, c.Status.QuorumRecovery
	s.Approval = c.Annotations[etcdv1alpha2.AnnotationApproveRecovery]
	if a := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionAvailable); a != nil && a.Reason == membership.ReasonQuorumLost {
		s.QuorumLostSince = a.LastTransitionTime.Time
	}
	if b := c.Status.ReplacementBackoff; b != nil {
		s.Backoff = membership.Backoff{Attempts: b.Attempts, NotBefore: b.NotBefore.Time}
	}
	if observed != nil {
		s.Target = observed.Replicas
		s.Memory = observed.Storage.Medium == etcdv1alpha2.StorageMediumMemory
	}
	for i := range o.pvcs {
		pvc := &o.pvcs[i]
		s.PVCs = append(s.PVCs, membership.PVC{
			Name: pvc.Name, Member: pvc.Labels[etcdv1alpha2.LabelComponent],
			MemberUID: pvc.Annotations[etcdv1alpha2.AnnotationMemberUID], Deleting: !pvc.DeletionTimestamp.IsZero(),
			MemberRecreated: o.recreated(pvc.Labels[etcdv1alpha2.LabelComponent]),
			PeerURL:         desired.PeerURL(readoptedStub(c, pvc.Labels[etcdv1alpha2.LabelComponent])),
			Foreign:         foreignPVC(c, pvc),
			Retained:        retainedClusterID(c, pvc),
			Claim:           claimFrom(pvc, c, o.classes),
		})
	}
	for i := range o.members {
		s.Members = append(s.Members, o.memberView(&o.members[i], observed))
	}
	return s
}

// memberView projects one EtcdMember, with its Pod, for the planner.
func (o *observation) memberView(m *etcdv1alpha2.EtcdMember, observed *etcdv1alpha2.ObservedClusterSpec) membership.Member {
	c, pod := o.cluster, o.pods[m.Name]
	// remove-first is a flag: its presence is the request, whatever the value, so that
	// "kubectl annotate ... remove-first=" (an empty value) counts as much as "=true".
	_, removeFirst := m.Annotations[etcdv1alpha2.AnnotationRemoveFirst]
	replaceReason, replaceAnnotated := m.Annotations[etcdv1alpha2.AnnotationReplace]
	// An unparsable ID is treated as unknown: the member is then matched by peer URL and name.
	memberID, _ := etcdclient.ParseID(m.Status.MemberID)
	ready := meta.FindStatusCondition(m.Status.Conditions, etcdv1alpha2.ConditionReady)
	healthy := meta.FindStatusCondition(m.Status.Conditions, etcdv1alpha2.ConditionHealthy)
	v := membership.Member{
		Name:             m.Name,
		UID:              string(m.UID),
		Created:          m.CreationTimestamp.Time,
		PeerURL:          desired.PeerURL(m),
		Bootstrap:        m.Spec.Bootstrap,
		Pending:          m.Spec.InitialCluster == "",
		Dormant:          m.Spec.Dormant,
		Deleting:         !m.DeletionTimestamp.IsZero(),
		RemovalReason:    m.Annotations[etcdv1alpha2.AnnotationRemovalReason],
		RemoveFirst:      removeFirst,
		AllowDeletion:    m.Annotations[etcdv1alpha2.AnnotationAllowDeletion] == "true",
		Unhealthy:        healthy != nil && healthy.Status == metav1.ConditionFalse,
		Updated:          meta.IsStatusConditionTrue(m.Status.Conditions, etcdv1alpha2.ConditionUpdated),
		AuthorisedHash:   m.Annotations[etcdv1alpha2.AnnotationTemplateHash],
		PodRunning:       podstate.Running(pod) && pod.UID != "" && (m.Status.PodUID == "" || string(pod.UID) == m.Status.PodUID),
		PodReady:         podstate.Serving(pod),
		ContainerStarted: podstate.ContainerStarted(pod, desired.ContainerName),
		RestoreFailure:   restoreFailure(c, m, pod),
		VoterHint:        m.Status.IsVoter,
		MemberID:         memberID,
		ReplaceRequested: replaceReason,
		ReplaceAnnotated: replaceAnnotated,
		Version:          m.Status.Version,
		Spec:             m.Spec.DeepCopy(),
	}
	// The member controller's Ready condition, confirmed by the Pod in the cache both
	// controllers share: the condition can only have turned True after that cache showed a
	// Ready Pod, but it lags a deleted or failed Pod by one member-controller pass, during which
	// status would count a member with no Pod as Ready (docs/e2e-lifecycle.md, finding 8).
	if ready != nil && ready.Status == metav1.ConditionTrue && podstate.Serving(pod) {
		v.Ready, v.ReadySince = true, ready.LastTransitionTime.Time
	}
	if ready != nil && ready.Status == metav1.ConditionFalse {
		v.NotReadyMessage = ready.Message
	}
	if v.Unhealthy {
		v.HealthyReason, v.HealthyMessage = healthy.Reason, healthy.Message
	}
	if pod != nil {
		v.PodHash = pod.Annotations[etcdv1alpha2.AnnotationTemplateHash]
	}
	v.ReadyHash = m.Status.ReadyTemplateHash
	target := membership.MemberTarget(observed, m.Spec.Storage.Size, o.claimOf(m.Name))
	v.TLSMoving = tlsMoving(c, m)
	v.TemplateCurrent = membership.TemplateCurrent(&m.Spec, target) && !v.TLSMoving
	if target != nil {
		spec := m.Spec.DeepCopy()
		applyMemberTemplate(c, spec, target)
		v.WantHash = o.templateHash(spec)
	}
	return v
}

// templateHash is the hash of member template spec as the member controller renders its Pod:
// the same function over the same images (etcd's, and the guard's for PVC members) and the
// digests of the CA bundles its TLS Secrets hold, as this pass read them. Empty when a Secret it
// mounts was not read (it is missing; the member waits for it anyway): a hash computed without
// its CA would roll the member for nothing.
func (o *observation) templateHash(spec *etcdv1alpha2.EtcdMemberSpec) string {
	var ca desired.CADigests
	if t := spec.TLS; t != nil {
		var ok bool
		if ca.Client, ok = o.caDigest(t.ClientServerSecretRef); !ok {
			return ""
		}
		if ca.Peer, ok = o.caDigest(t.PeerSecretRef); !ok {
			return ""
		}
	}
	return desired.TemplateHash(spec, desired.MemberImages(o.config.imageRepository, spec.Version, o.config.guardImage), ca)
}

// caDigest is the digest of the CA bundle of the Secret ref names, as read this pass; "" for no
// Secret, false when it was not read.
func (o *observation) caDigest(ref *corev1.LocalObjectReference) (string, bool) {
	if ref == nil {
		return "", true
	}
	d, ok := o.caBundles[ref.Name]
	return d, ok
}

// memberTarget is the latched target member m's template is judged against and written from:
// status.observed, with the storage size its PVC provides so far (membership.MemberTarget).
func (o *observation) memberTarget(m *etcdv1alpha2.EtcdMember) *etcdv1alpha2.ObservedClusterSpec {
	return membership.MemberTarget(o.cluster.Status.Observed, m.Spec.Storage.Size, o.claimOf(m.Name))
}

// bootstrapping reports whether the cluster is still forming: it has never been Available. Only
// the wording of Progressing depends on it.
func bootstrapping(c *etcdv1alpha2.EtcdCluster) bool {
	if c.Status.ClusterID == "" {
		return true
	}
	av := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionAvailable)
	pr := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionProgressing)
	if av != nil && av.Status == metav1.ConditionTrue {
		return false
	}
	return pr == nil || pr.Reason == membership.ReasonBootstrapping || pr.Reason == membership.ReasonWaitingForSeed ||
		pr.Reason == membership.ReasonInitialSnapshot || pr.Reason == membership.ReasonPromotingLearner
}

// claimOf returns the storage view of member name's data PVC, nil without one.
func (o *observation) claimOf(member string) *membership.Claim {
	for i := range o.pvcs {
		if pvc := &o.pvcs[i]; pvc.Name == desired.PVCName(member) && pvc.DeletionTimestamp.IsZero() {
			c := claimFrom(pvc, o.cluster, o.classes)
			return &c
		}
	}
	return nil
}

// claimFrom projects a PVC for the storage planner. The class that decides whether it can grow
// is the one the API server's resize admission checks: the PVC's own storageClassName (set from
// the default class when the PVC was created), else the cluster's, else today's default.
func claimFrom(pvc *corev1.PersistentVolumeClaim, c *etcdv1alpha2.EtcdCluster, classes *storageClasses) membership.Claim {
	claim := membership.Claim{
		Request:  pvc.Spec.Resources.Requests[corev1.ResourceStorage],
		Capacity: pvc.Status.Capacity[corev1.ResourceStorage],
		Bound:    pvc.Status.Phase == corev1.ClaimBound,
	}
	for _, cond := range pvc.Status.Conditions {
		if cond.Type == corev1.PersistentVolumeClaimFileSystemResizePending && cond.Status == corev1.ConditionTrue {
			claim.FileSystemResizePending = true
		}
	}
	switch {
	case pvc.Spec.StorageClassName != nil:
		claim.Class = *pvc.Spec.StorageClassName
	case c.Spec.Storage.StorageClassName != nil:
		claim.Class = *c.Spec.Storage.StorageClassName
	case classes != nil:
		claim.Class = classes.defaultName
	}
	if classes != nil && classes.unreadable {
		claim.ClassUnreadable = true
		return claim
	}
	if classes != nil && claim.Class != "" {
		if class, ok := classes.byName[claim.Class]; ok {
			claim.ClassFound = true
			claim.Expandable = class.AllowVolumeExpansion != nil && *class.AllowVolumeExpansion
		}
	}
	return claim
}

// recreated reports whether an EtcdMember named member exists and was created under an
// explicit name, not GenerateName: re-created for its PVC (or re-applied by a person).
func (o *observation) recreated(member string) bool {
	for i := range o.members {
		if m := &o.members[i]; m.Name == member {
			return m.GenerateName == ""
		}
	}
	return false
}

// foreignPVC reports a PVC that carries the cluster label but holds another cluster's data:
// controlled by something other than this cluster, or older than the cluster (kept by
// reclaimPolicy Retain from an earlier cluster of the same name, or adopted from another
// operator with members this one cannot re-create faithfully). A retained PVC whose cluster ID
// this cluster latched is its own again (docs/design/storage.md, "Reclaim policy").
func foreignPVC(c *etcdv1alpha2.EtcdCluster, pvc *corev1.PersistentVolumeClaim) bool {
	if id := retainedClusterID(c, pvc); id != "" && id == c.Status.ClusterID {
		return false // retained by an earlier cluster of this name, whose data this one took over
	}
	// A PVC this cluster controls is its own whatever its age: the cluster only takes ownership of
	// data it took over, and a retained PVC re-owned under reclaimPolicy Delete right after its
	// re-adoption would otherwise turn foreign, which stopped the re-adoption of the others
	// (docs/design/storage.md, "Reclaim policy").
	if ref := metav1.GetControllerOf(pvc); ref != nil {
		return ref.UID != c.UID
	}
	return pvc.CreationTimestamp.Before(&c.CreationTimestamp)
}

// retainedClusterID is the cluster ID recorded on a PVC an earlier cluster of the same name kept
// under reclaimPolicy Retain: owned by nothing, older than c, made by the operator for a member
// (member-uid), and stamped with the cluster it served (cluster-id). Empty for any other PVC.
func retainedClusterID(c *etcdv1alpha2.EtcdCluster, pvc *corev1.PersistentVolumeClaim) string {
	if metav1.GetControllerOf(pvc) != nil || !pvc.CreationTimestamp.Before(&c.CreationTimestamp) ||
		pvc.Annotations[etcdv1alpha2.AnnotationMemberUID] == "" {
		return ""
	}
	return pvc.Annotations[etcdv1alpha2.AnnotationClusterID]
}
