package etcdcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/pki"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// Event reasons of the certificates step (docs/design/conditions-and-events.md).
const (
	eventCertificateCreated      = "CertificateCreated"
	eventCertificateRenewed      = "CertificateRenewed"
	eventCertificateExpiringSoon = "CertificateExpiringSoon"
)

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;patch

// syncCertificates announces the user's certificates that expire soon, and writes the managed
// Secrets the plan calls for (docs/tls.md, "Operator-managed certificates"), each CA before any
// leaf. A pass that wrote any ends here and looks again at once: the next pass plans over what it
// reads back, so leaves are signed by a CA as stored, and members start only once every Secret
// they mount exists.
func (x *executor) syncCertificates(ctx context.Context) (step.Result, error) {
	for _, p := range x.obs.certs.expiring {
		if x.tlsCache.announce(x.key(), p.Secret+"/"+p.Certificate, x.obs.now) {
			x.event(corev1.EventTypeWarning, eventCertificateExpiringSoon, p.Message)
		}
	}
	plan := x.obs.certs.managed
	if plan == nil || len(plan.Writes) == 0 {
		return step.Continue, nil
	}
	for _, w := range plan.Writes {
		if err := x.writeCertificate(ctx, w); err != nil {
			return step.Result{}, err
		}
	}
	return step.Requeue(nextStepDelay, "managed certificates written"), nil
}

// writeCertificate issues one managed Secret and writes it: a CA is created, never replaced;
// a leaf is created, or its data replaced under an optimistic lock.
func (x *executor) writeCertificate(ctx context.Context, w pki.Write) error {
	data, signer, err := x.issue(ctx, w)
	if err != nil {
		return err
	}
	log := logf.FromContext(ctx).WithValues("secret", w.Secret)
	if w.Create {
		c := x.cluster()
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: w.Secret, Namespace: c.Namespace, Labels: desired.ClusterLabels(c.Name),
				OwnerReferences: []metav1.OwnerReference{controllerRef(c)}},
			Type: corev1.SecretTypeTLS, Data: data,
		}
		if err := x.client.Create(ctx, s); err != nil {
			return fmt.Errorf("creating TLS Secret %s: %w", w.Secret, err)
		}
		log.Info("Issued a managed certificate", "reason", w.Reason)
		x.event(corev1.EventTypeNormal, eventCertificateCreated, issuedNote("issued", w, signer))
		return nil
	}
	old := &corev1.Secret{}
	if err := x.apiReader.Get(ctx, types.NamespacedName{Namespace: x.cluster().Namespace, Name: w.Secret}, old); err != nil {
		return fmt.Errorf("reading TLS Secret %s: %w", w.Secret, err)
	}
	renewed := old.DeepCopy()
	if renewed.Data == nil {
		renewed.Data = map[string][]byte{}
	}
	for k, v := range data {
		renewed.Data[k] = v
	}
	if err := x.client.Patch(ctx, renewed, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("renewing TLS Secret %s: %w", w.Secret, err)
	}
	log.Info("Renewed a managed certificate", "reason", w.Reason)
	x.event(corev1.EventTypeNormal, eventCertificateRenewed, issuedNote("renewed", w, signer))
	return nil
}

// issuedNote is the Event note of an issued certificate.
func issuedNote(verb string, w pki.Write, signer string) string {
	if w.Kind == pki.WriteCA {
		return fmt.Sprintf("%s the CA in Secret %s (%s), valid for %d years", verb, w.Secret, w.CommonName, int(pki.CAValidity.Hours()/24/365))
	}
	return fmt.Sprintf("%s the certificate in Secret %s (%s), signed by the CA in Secret %s, valid for %d days: %s",
		verb, w.Secret, w.Request.CommonName, signer, int(w.Request.Validity/(24*time.Hour)), w.Reason)
}

// issue draws a new key and certificate for w and returns the Secret data, and the CA Secret
// that signed a leaf.
func (x *executor) issue(ctx context.Context, w pki.Write) (map[string][]byte, string, error) {
	if w.Kind == pki.WriteCA {
		kp, err := pki.NewCA(w.CommonName, pki.CAValidity, x.obs.now)
		if err != nil {
			return nil, "", err
		}
		certs, err := pki.ParseCertificates(kp.Cert)
		if err != nil {
			return nil, "", err
		}
		// ca.crt is the trust bundle every leaf copies; it can hold a second CA later (a
		// rotation, docs/tls.md), which tls.crt, the one that signs, cannot.
		return map[string][]byte{pki.CertKey: kp.Cert, pki.KeyKey: kp.Key, pki.CAKey: pki.TrustBundle(certs[0])}, "", nil
	}
	ca, bundle, err := x.signer(ctx, w)
	if err != nil {
		return nil, "", err
	}
	kp, err := ca.Issue(w.Request, x.obs.now)
	if err != nil {
		return nil, "", err
	}
	// The CA Secret's bundle, byte for byte: a renewal leaves ca.crt, and so every member's
	// template hash, as it was.
	return map[string][]byte{pki.CertKey: kp.Cert, pki.KeyKey: kp.Key, pki.CAKey: bundle}, w.Signer, nil
}

// signer reads the CA Secret that signs a leaf, uncached, and loads it only at the version the
// plan was made on: another version means someone changed the CA since, and the leaf is planned
// again over what is stored now (a conflict, which the pass retries quietly).
func (x *executor) signer(ctx context.Context, w pki.Write) (*pki.CA, []byte, error) {
	s := &corev1.Secret{}
	if err := x.apiReader.Get(ctx, types.NamespacedName{Namespace: x.cluster().Namespace, Name: w.Signer}, s); err != nil {
		return nil, nil, fmt.Errorf("reading CA Secret %s: %w", w.Signer, err)
	}
	if s.ResourceVersion != w.SignerVersion {
		return nil, nil, apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, w.Signer,
			fmt.Errorf("the CA changed since the pass planned %s over it", w.Secret))
	}
	ca, err := pki.LoadCA(s.Data[pki.CertKey], s.Data[pki.KeyKey])
	if err != nil {
		return nil, nil, fmt.Errorf("loading the CA in Secret %s: %w", w.Signer, err)
	}
	return ca, s.Data[pki.CAKey], nil
}

// renewalRequeue lowers the pass's requeue interval d so that the pass after it runs when the
// earliest managed leaf falls due (never sooner than nextStepDelay).
func renewalRequeue(d time.Duration, plan *pki.Plan, now time.Time) time.Duration {
	if plan == nil || plan.NextRenewal.IsZero() {
		return d
	}
	wait := max(plan.NextRenewal.Sub(now), nextStepDelay)
	if d == 0 || wait < d {
		return wait
	}
	return d
}
