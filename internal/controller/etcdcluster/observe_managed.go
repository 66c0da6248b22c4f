package etcdcluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/pki"
)

// observeManaged reads the managed Secrets, and the user's Secrets a move to managed TLS starts
// from, and plans which to write (docs/tls.md, "Operator-managed certificates", "CA rotation",
// "Moving to managed certificates"). The leaves that do not exist yet are not missing in the
// sense of TLSSecretMissing: the operator issues them itself.
func (r *Reconciler) observeManaged(ctx context.Context, o *observation) error {
	c := o.cluster
	cas, leaves := managedSecrets(c, r.clusterDomain)
	o.caBundles = map[string]string{}
	observed := map[string]pki.Observed{}
	reads := map[string]*cachedSecret{}
	read := func(name string) error {
		if _, done := reads[name]; done {
			return nil
		}
		s, err := r.readSecret(ctx, c, name)
		if err != nil {
			return err
		}
		reads[name] = s
		if s != nil {
			observed[name] = pki.Observed{ResourceVersion: s.resourceVersion, Material: s.material, Next: s.next, Token: s.token, ReissuedAt: s.reissuedAt}
			o.caBundles[name] = s.caDigest
		}
		return nil
	}
	for _, ca := range cas {
		if err := read(ca.Secret); err != nil {
			return err
		}
	}
	for _, l := range leaves {
		if err := read(l.Secret); err != nil {
			return err
		}
	}
	sources := o.moveSources(leaves, reads)
	for _, src := range sources {
		if err := read(src); err != nil {
			return err
		}
	}
	plan := pki.PlanManaged(pki.ManagedInput{CAs: cas, Leaves: leaves, Observed: observed, Sources: sources, Now: o.now,
		Rotation: pki.Rotation{Token: c.Annotations[etcdv1alpha2.AnnotationRotateCA], TrustLoaded: o.trustLoaded(), Dwell: r.caRotationDwell}})
	o.tls.Issuing = plan.Missing
	o.tls.Certificates = certificateProblems(plan.Problems)
	o.tls.Rotating = plan.Rotating
	o.certs.managed = &plan
	return nil
}

// moveSources are the user's Secrets a move to spec.tls.managed starts the managed leaves from,
// by leaf Secret (docs/tls.md, "Moving to managed certificates"): a leaf Secret the cluster does
// not control is the user's own under the managed name; otherwise the Secret that members not
// on the managed Secrets yet still mount for the leaf's role. The server certificate stands in
// for the operator's client certificate, whose Secret no member names: it carries client auth
// (the check of your own certificates requires it), and the CA the members trust signed it.
func (o *observation) moveSources(leaves []pki.LeafSpec, reads map[string]*cachedSecret) map[string]string {
	c := o.cluster
	out := map[string]string{}
	for _, l := range leaves {
		if s := reads[l.Secret]; s != nil && s.controller != c.UID {
			out[l.Secret] = l.Secret
			continue
		}
		for i := range o.members {
			if ref := mountedFor(o.members[i].Spec.TLS, l.Secret, c.Name); ref != "" {
				out[l.Secret] = ref
				break
			}
		}
	}
	return out
}

// mountedFor names the Secret other than the managed one that a member with TLS t mounts for
// the role of managed leaf Secret leaf; "" when it mounts the managed one, or none.
func mountedFor(t *etcdv1alpha2.EtcdMemberTLS, leaf, cluster string) string {
	var ref *corev1.LocalObjectReference
	managed := serverSecretName(cluster)
	switch {
	case t == nil:
	case leaf == serverSecretName(cluster) || leaf == operatorClientSecretName(cluster):
		ref = t.ClientServerSecretRef
	case leaf == peerSecretName(cluster):
		ref, managed = t.PeerSecretRef, peerSecretName(cluster)
	}
	if ref == nil || ref.Name == managed {
		return ""
	}
	return ref.Name
}

// trustLoaded reports whether every member mounts the cluster's managed Secrets and every
// member Pod runs its member's template with the CA bundles those Secrets hold as this pass read
// them. The template hash covers the digest of each mounted ca.crt (docs/tls.md, "Rotation"),
// so a Pod that carries the hash computed now was built on, and its etcd started with, the
// bundles as they are. Only then may a CA some member did not trust at its start sign what the
// members are shown, or a CA leave a bundle (docs/tls.md, "CA rotation"). A member without a
// Pod runs no etcd: whatever Pod it gets next starts on the current bundles.
func (o *observation) trustLoaded() bool {
	want := memberTLS(o.cluster)
	for i := range o.members {
		m := &o.members[i]
		if !equality.Semantic.DeepEqual(m.Spec.TLS, want) {
			return false
		}
		pod := o.pods[m.Name]
		if pod == nil {
			continue
		}
		if h := o.templateHash(&m.Spec); h == "" || pod.Annotations[etcdv1alpha2.AnnotationTemplateHash] != h {
			return false
		}
	}
	return true
}
