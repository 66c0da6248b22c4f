package adopt

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
)

// createCluster is step 1: the generated Secrets, the EtcdCluster (inert: adoption-in-progress)
// and its status prefill, which makes bootstrap impossible.
func (a *Adopter) createCluster(ctx context.Context, t Target) (*etcdv1alpha2.EtcdCluster, error) {
	planned := t.Plan.Objects.EtcdCluster
	if t.Translation != nil {
		for _, s := range t.Translation.Secrets {
			if err := a.createSecret(ctx, planned.Namespace, s); err != nil {
				return nil, err
			}
		}
	}
	c := &etcdv1alpha2.EtcdCluster{}
	err := a.Kube.Get(ctx, client.ObjectKeyFromObject(planned), c)
	switch {
	case apierrors.IsNotFound(err):
		c = planned.DeepCopy()
		c.Status = etcdv1alpha2.EtcdClusterStatus{}
		if err := a.Kube.Create(ctx, c); err != nil {
			return nil, fmt.Errorf("creating EtcdCluster %s: %w", c.Name, err)
		}
		a.logf("created EtcdCluster %s/%s", c.Namespace, c.Name)
	case err != nil:
		return nil, err
	default:
		if err := CheckOwnCluster(c); err != nil {
			return nil, err
		}
	}
	if StatusPrefilled(c) {
		return c, nil
	}
	c.Status = *planned.Status.DeepCopy()
	c.Status.ObservedGeneration = c.Generation
	if err := a.Kube.Status().Update(ctx, c); err != nil {
		return nil, fmt.Errorf("writing EtcdCluster %s status: %w", c.Name, err)
	}
	a.logf("wrote EtcdCluster %s status: clusterID %s", c.Name, c.Status.ClusterID)
	return c, nil
}

// createSecret creates a generated Secret unless it exists: a generated password is made once.
func (a *Adopter) createSecret(ctx context.Context, ns string, g translate.GeneratedSecret) error {
	existing := &corev1.Secret{}
	err := a.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: g.Name}, existing)
	if err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	data, err := a.secretData(ctx, ns, g)
	if err != nil {
		return err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: g.Name, Namespace: ns,
			Annotations: map[string]string{etcdv1alpha2.AnnotationMigratedFrom: translate.MigratedFrom}},
		Type: g.Type, Data: data,
	}
	if err := a.Kube.Create(ctx, s); err != nil {
		return fmt.Errorf("creating Secret %s: %w", g.Name, err)
	}
	a.logf("created Secret %s/%s (%s)", ns, g.Name, g.Purpose)
	return nil
}

// secretData fills a generated Secret's keys: copied from the legacy Secrets, the plan's exact
// CA bundle for ca.crt, fixed values, random passwords.
func (a *Adopter) secretData(ctx context.Context, ns string, g translate.GeneratedSecret) (map[string][]byte, error) {
	data := map[string][]byte{}
	for _, k := range g.Keys {
		switch {
		case k.Key == "ca.crt" && g.CABundle != nil:
			data[k.Key] = g.CABundle
		case k.Random:
			b := make([]byte, 24)
			if _, err := rand.Read(b); err != nil {
				return nil, err
			}
			data[k.Key] = []byte(base64.RawURLEncoding.EncodeToString(b))
		case k.Value != "":
			data[k.Key] = []byte(k.Value)
		default:
			for _, from := range k.From {
				name, key, _ := strings.Cut(from, "/")
				src := &corev1.Secret{}
				if err := a.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, src); err != nil {
					return nil, fmt.Errorf("reading Secret %s for %s: %w", name, g.Name, err)
				}
				data[k.Key] = append(data[k.Key], src.Data[key]...)
			}
		}
	}
	return data, nil
}

// createMembers is step 2: one EtcdMember per Pod, named like it, controlled by the cluster,
// with its status prefilled.
func (a *Adopter) createMembers(ctx context.Context, c *etcdv1alpha2.EtcdCluster, t Target) error {
	for i := range t.Plan.Objects.EtcdMembers {
		planned := &t.Plan.Objects.EtcdMembers[i]
		m := &etcdv1alpha2.EtcdMember{}
		err := a.Kube.Get(ctx, client.ObjectKeyFromObject(planned), m)
		switch {
		case apierrors.IsNotFound(err):
			m = planned.DeepCopy()
			m.Status = etcdv1alpha2.EtcdMemberStatus{}
			m.Annotations[AnnotationRestartBaseline] = RestartBaseline(k8stypes.UID(planned.Status.PodUID), t.Restarts[m.Name])
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: etcdv1alpha2.GroupVersion.String(), Kind: "EtcdCluster",
				Name: c.Name, UID: c.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
			if err := a.Kube.Create(ctx, m); err != nil {
				return fmt.Errorf("creating EtcdMember %s: %w", m.Name, err)
			}
			a.logf("created EtcdMember %s/%s", m.Namespace, m.Name)
		case err != nil:
			return err
		case !ControlledBy(m, c.UID):
			return fmt.Errorf("an EtcdMember %s/%s exists that is not of the adopted cluster; remove it, then re-run", m.Namespace, m.Name)
		}
		if MemberStatusPrefilled(m) {
			continue
		}
		m.Status = *planned.Status.DeepCopy()
		if err := a.Kube.Status().Update(ctx, m); err != nil {
			return fmt.Errorf("writing EtcdMember %s status: %w", m.Name, err)
		}
		a.logf("wrote EtcdMember %s status: memberID %s", m.Name, m.Status.MemberID)
	}
	return nil
}
