package etcdcluster

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// This file renders the EtcdMembers the controller creates. It is pure: the executors create
// what it returns.

// newMember renders a pending EtcdMember (no initialCluster yet): the seed, or a member of a
// scale-up, created with GenerateName under the latched template. Its template hash is
// authorised from the start, so that its Pod carries it and the roll has nothing to record.
func newMember(c *etcdv1alpha2.EtcdCluster, seed bool, hash func(*etcdv1alpha2.EtcdMemberSpec) string) *etcdv1alpha2.EtcdMember {
	m := &etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    c.Name + "-",
			Namespace:       c.Namespace,
			Labels:          desired.ClusterLabels(c.Name),
			OwnerReferences: []metav1.OwnerReference{controllerRef(c)},
		},
		Spec: etcdv1alpha2.EtcdMemberSpec{
			ClusterName:  c.Name,
			ClusterToken: c.Status.ClusterToken,
			Bootstrap:    seed,
			TLS:          memberTLS(c),
		},
	}
	membership.ApplyTemplate(&m.Spec, c.Status.Observed)
	authoriseHash(m, hash(&m.Spec))
	if seed && c.Spec.Bootstrap != nil {
		m.Spec.Restore = c.Spec.Bootstrap.Restore.DeepCopy()
	}
	return m
}

// readoptedMember renders the EtcdMember re-created for an orphan data PVC under the member's old
// name (docs/design/healing.md, re-adoption), with the size its PVC provides rather than the
// latched one its volume may not have grown to.
func readoptedMember(c *etcdv1alpha2.EtcdCluster, a membership.Action, claim *membership.Claim) *etcdv1alpha2.EtcdMember {
	m := readoptedStub(c, a.Member)
	m.Labels = desired.MemberLabels(c.Name, a.Member)
	m.OwnerReferences = []metav1.OwnerReference{controllerRef(c)}
	m.Spec.ClusterToken = c.Status.ClusterToken
	// etcd ignores --initial-cluster once its data directory holds a member; the member
	// controller only builds a Pod for a member that has one.
	m.Spec.InitialCluster = a.InitialCluster
	m.Spec.Dormant = a.Readopt.Dormant
	membership.ApplyTemplate(&m.Spec, membership.MemberTarget(c.Status.Observed, nil, claim))
	return m
}

// readoptedStub is the identity of a member re-created under name: enough to render the peer
// URL it would advertise, which is how etcd's member list is matched to an orphan PVC.
func readoptedStub(c *etcdv1alpha2.EtcdCluster, name string) *etcdv1alpha2.EtcdMember {
	return &etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace},
		Spec:       etcdv1alpha2.EtcdMemberSpec{ClusterName: c.Name, TLS: memberTLS(c)},
	}
}

// authoriseHash records hash as the template hash the member's Pod may run; empty records
// nothing (a hash this controller cannot compute).
func authoriseHash(m *etcdv1alpha2.EtcdMember, hash string) {
	if hash == "" {
		return
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[etcdv1alpha2.AnnotationTemplateHash] = hash
}

// applyMemberTemplate writes onto a member's spec the template it runs under the latched target:
// the latched fields and, under spec.tls.managed, the cluster's TLS Secrets, onto which a member
// that still mounts the user's Secrets is moved by a roll (docs/tls.md, "Moving to managed
// certificates"). Otherwise TLS stays the member's own: members adopted from the legacy
// operator keep theirs.
func applyMemberTemplate(c *etcdv1alpha2.EtcdCluster, spec *etcdv1alpha2.EtcdMemberSpec, target *etcdv1alpha2.ObservedClusterSpec) {
	membership.ApplyTemplate(spec, target)
	if managedTLS(c) {
		spec.TLS = memberTLS(c)
	}
}

// tlsMoving reports a member of a cluster under spec.tls.managed that does not mount the managed
// Secrets yet.
func tlsMoving(c *etcdv1alpha2.EtcdCluster, m *etcdv1alpha2.EtcdMember) bool {
	return managedTLS(c) && !equality.Semantic.DeepEqual(m.Spec.TLS, memberTLS(c))
}

// controllerRef is the controlling ownerReference of a member.
func controllerRef(c *etcdv1alpha2.EtcdCluster) metav1.OwnerReference {
	return *metav1.NewControllerRef(c, etcdv1alpha2.GroupVersion.WithKind("EtcdCluster"))
}

// memberTLS is the part of the cluster's TLS a member's Pod needs (docs/api.md, member
// template): Secret names, whether BYO, cert-manager's or the operator's.
func memberTLS(c *etcdv1alpha2.EtcdCluster) *etcdv1alpha2.EtcdMemberTLS {
	out := &etcdv1alpha2.EtcdMemberTLS{PeerAutoTLS: c.Annotations[etcdv1alpha2.AnnotationPeerAutoTLS] == "true"}
	if t := c.Spec.TLS; t != nil {
		if t.Managed != nil {
			// Client mutual TLS and peer TLS from the operator's CAs (certificates.go).
			out.ClientServerSecretRef = &corev1.LocalObjectReference{Name: serverSecretName(c.Name)}
			out.ClientMTLS = true
			out.PeerSecretRef = &corev1.LocalObjectReference{Name: peerSecretName(c.Name)}
		}
		if cl := t.Client; cl != nil {
			switch {
			case cl.ServerSecretRef != nil:
				out.ClientServerSecretRef = cl.ServerSecretRef.DeepCopy()
				out.ClientMTLS = cl.OperatorClientSecretRef != nil
			case cl.CertManager != nil:
				out.ClientServerSecretRef = &corev1.LocalObjectReference{Name: c.Name + "-server-tls"}
				out.ClientMTLS = cl.CertManager.OperatorClientIssuerRef != nil
			}
		}
		if pe := t.Peer; pe != nil {
			switch {
			case pe.SecretRef != nil:
				out.PeerSecretRef = pe.SecretRef.DeepCopy()
			case pe.CertManager != nil:
				out.PeerSecretRef = &corev1.LocalObjectReference{Name: c.Name + "-peer-tls"}
			}
		}
	}
	if *out == (etcdv1alpha2.EtcdMemberTLS{}) {
		return nil
	}
	return out
}
