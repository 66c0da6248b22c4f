package desired

import (
	"crypto/sha256"
	"encoding/hex"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// MemberPodLabels are the labels a member's Pod carries: the member labels, role=voter while the
// member is a voter, and the member's additionalMetadata labels underneath them (reserved keys
// dropped, the operator's keys winning). They are what Pod renders: OperatorPodLabels plus
// AdditionalLabels.
func MemberPodLabels(member *etcdv1alpha2.EtcdMember) map[string]string {
	return mergeMetadata(additionalLabels(member.Spec.AdditionalMetadata), OperatorPodLabels(member))
}

// OperatorPodLabels are the labels of a member's Pod that the operator itself decides: the
// member labels and, while the member is a voter, role=voter.
func OperatorPodLabels(member *etcdv1alpha2.EtcdMember) map[string]string {
	labels := MemberLabels(member.Spec.ClusterName, member.Name)
	if member.Status.IsVoter {
		labels[etcdv1alpha2.LabelRole] = etcdv1alpha2.RoleVoter
	}
	return labels
}

// MemberPVCLabels are the labels a member's PVC carries: the member labels over its
// additionalMetadata labels. PVCs never carry the role label.
func MemberPVCLabels(member *etcdv1alpha2.EtcdMember) map[string]string {
	return mergeMetadata(additionalLabels(member.Spec.AdditionalMetadata), MemberLabels(member.Spec.ClusterName, member.Name))
}

// AdditionalLabels are the member's additionalMetadata labels that actually reach its Pod and
// PVC: reserved keys and keys the operator sets itself (the member labels, role) dropped. The
// member controller keeps them in place, and removes them again when they leave the spec.
func AdditionalLabels(member *etcdv1alpha2.EtcdMember) map[string]string {
	out := map[string]string{}
	own := MemberLabels(member.Spec.ClusterName, member.Name)
	for k, v := range additionalLabels(member.Spec.AdditionalMetadata) {
		if _, taken := own[k]; !taken && !isReserved(k) {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// AdditionalAnnotations are the member's additionalMetadata annotations with reserved keys
// dropped: what the member controller keeps on an existing Pod or PVC in place (and removes when
// they leave the spec). The operator's
// own annotations (template-hash on the Pod, member-uid on the PVC) are deliberately not part of
// it: they record facts about the object (what it was built from, whom it belongs to) and are
// written only when the object is created or, for member-uid, re-adopted.
func AdditionalAnnotations(member *etcdv1alpha2.EtcdMember) map[string]string {
	return mergeMetadata(additionalAnnotations(member.Spec.AdditionalMetadata), nil)
}

// CACertKey is the key of the CA bundle in a kubernetes.io/tls Secret (and in cert-manager's).
const CACertKey = tlsCAKey

// CADigest is the digest of one CA bundle as it enters CADigests: "sha256:<hex>" of the bytes of
// the Secret's ca.crt, or "" when there is none. Every controller that computes a template hash
// must compute CA digests with this function, or their hashes disagree and members roll for no
// reason.
func CADigest(caPEM []byte) string {
	if len(caPEM) == 0 {
		return ""
	}
	sum := sha256.Sum256(caPEM)
	return "sha256:" + hex.EncodeToString(sum[:])
}
