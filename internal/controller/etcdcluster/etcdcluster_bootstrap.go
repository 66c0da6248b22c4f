package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// createMember creates a pending EtcdMember — the seed (B1) or a new member (§6 step 4) — with
// GenerateName. The API server's name generation is the only dedupe a stale cache cannot break,
// so an uncached list must first confirm that the cache missed no member (style.md rule 4).
func (p *pass) createMember(ctx context.Context, seed bool) error {
	c := p.cluster
	var list etcdv1alpha2.EtcdMemberList
	if err := p.r.apiReader.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingLabels{etcdv1alpha2.LabelCluster: c.Name}); err != nil {
		return fmt.Errorf("listing EtcdMembers uncached before creating one: %w", err)
	}
	fresh := ownedMembers(c, list.Items)
	if len(fresh) != len(p.members) {
		return &errWaiting{after: nextStepDelay, msg: fmt.Sprintf("the cache holds %d EtcdMembers, the API server %d", len(p.members), len(fresh))}
	}
	for i := range fresh {
		if fresh[i].Spec.InitialCluster == "" && !fresh[i].Spec.Dormant {
			return &errWaiting{after: nextStepDelay, msg: "EtcdMember " + fresh[i].Name + " is still pending"}
		}
	}
	m := &etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    c.Name + "-",
			Namespace:       c.Namespace,
			Labels:          desired.ClusterLabels(c.Name),
			OwnerReferences: []metav1.OwnerReference{newController(c)},
		},
		Spec: etcdv1alpha2.EtcdMemberSpec{
			ClusterName:  c.Name,
			ClusterToken: c.Status.ClusterToken,
			Bootstrap:    seed,
			TLS:          memberTLS(c),
		},
	}
	membership.ApplyTemplate(&m.Spec, c.Status.Observed)
	p.recordHash(m)
	if seed && c.Spec.Bootstrap != nil {
		m.Spec.Restore = c.Spec.Bootstrap.Restore.DeepCopy()
	}
	if err := p.r.client.Create(ctx, m); err != nil {
		return fmt.Errorf("creating an EtcdMember: %w", err)
	}
	if seed {
		failpoint.Inject(failpoint.SeedCreated)
		p.memberEvent(m, corev1.EventTypeNormal, eventSeedCreated, "created seed member "+m.Name)
		return nil
	}
	failpoint.Inject(failpoint.MemberCreated)
	p.memberEvent(m, corev1.EventTypeNormal, eventMemberCreated, "created member "+m.Name)
	return nil
}

// initSeed is B2: pre-stamp the seed as a voter (it founds the cluster as one, and its Pod's
// role label must not lag), then give it --initial-cluster = itself and its component label.
func (p *pass) initSeed(ctx context.Context, a membership.Action) error {
	m, err := p.member(a.Member)
	if err != nil {
		return err
	}
	stamped, err := p.patchMemberStatus(ctx, m, m.Status.MemberID, true, m.Status.Version)
	if err != nil {
		return err
	}
	if stamped {
		// Only after a write: a pass that finds the stamp from a crashed pass goes straight on
		// to the initialCluster patch, or a recurring crash here would livelock bootstrap.
		failpoint.Inject(failpoint.SeedVoterStamped)
	}
	if err := p.patchInitialCluster(ctx, m, a.InitialCluster); err != nil {
		return err
	}
	failpoint.Inject(failpoint.SeedInitialClusterPatched)
	return nil
}

// patchInitialCluster sets spec.initialCluster and the member's component label: from then on
// the member controller builds its PVC and Pod.
func (p *pass) patchInitialCluster(ctx context.Context, m *etcdv1alpha2.EtcdMember, initialCluster string) error {
	before := m.DeepCopy()
	m.Spec.InitialCluster = initialCluster
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	for k, v := range desired.MemberLabels(p.cluster.Name, m.Name) {
		m.Labels[k] = v
	}
	if err := p.r.client.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching the initial cluster of EtcdMember %s: %w", m.Name, err)
	}
	return nil
}

// memberTLS is the part of the cluster's TLS a member's Pod needs (api.md §3.1): Secret names,
// whether BYO or cert-manager's.
func memberTLS(c *etcdv1alpha2.EtcdCluster) *etcdv1alpha2.EtcdMemberTLS {
	out := &etcdv1alpha2.EtcdMemberTLS{PeerAutoTLS: c.Annotations[etcdv1alpha2.AnnotationPeerAutoTLS] == "true"}
	if t := c.Spec.TLS; t != nil {
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
