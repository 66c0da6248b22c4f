package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
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

// writeCertificate issues one managed Secret and writes it: a CA is created, and changed only by
// the steps of its rotation; a leaf is created, or its data replaced under an optimistic lock.
// What each Secret holds is decided in pure code (pki.RenderCA, RenderCAUpdate, RenderLeaf) over
// the Secrets as read at the versions the plan was made on.
func (x *executor) writeCertificate(ctx context.Context, w pki.Write) error {
	switch w.Kind {
	case pki.WriteCA:
		return x.createCA(ctx, w)
	case pki.WriteCAUpdate:
		return x.rotateCA(ctx, w)
	}
	return x.writeLeaf(ctx, w)
}

// createCA issues a CA and creates its Secret, recording the rotate-ca value it was created under.
func (x *executor) createCA(ctx context.Context, w pki.Write) error {
	st, err := pki.RenderCA(w, x.obs.now)
	if err != nil {
		return err
	}
	s := x.managedSecret(w.Secret, st.Data)
	setRotationRecords(s, st)
	if err := x.client.Create(ctx, s); err != nil {
		return fmt.Errorf("creating TLS Secret %s: %w", w.Secret, err)
	}
	logf.FromContext(ctx).Info("Issued a managed CA", "secret", w.Secret, "reason", w.Reason)
	x.event(corev1.EventTypeNormal, eventCertificateCreated, fmt.Sprintf("issued the CA in Secret %s (%s), valid for %d years",
		w.Secret, w.CommonName, int(pki.CAValidity.Hours()/24/365)))
	return nil
}

// writeLeaf writes a leaf Secret: a certificate issued by its CA, or the one it keeps (its own,
// or the user's a move starts from), with the CA's bundle.
func (x *executor) writeLeaf(ctx context.Context, w pki.Write) error {
	signer, err := x.secretAt(ctx, w.Signer, w.SignerVersion, "the CA changed since the pass planned "+w.Secret+" over it")
	if err != nil {
		return err
	}
	var old *corev1.Secret
	if !w.Create {
		if old, err = x.secretAt(ctx, w.Secret, "", ""); err != nil {
			return err
		}
	}
	var source *pki.Stored
	switch {
	case w.Source == "":
	case w.Source == w.Secret && old.ResourceVersion != w.SourceVersion:
		return conflict(w.Secret, "the Secret changed since the pass planned it")
	case w.Source == w.Secret:
		source = ptrTo(storedOf(old))
	default:
		src, err := x.secretAt(ctx, w.Source, w.SourceVersion, "the Secret changed since the pass planned "+w.Secret+" from it")
		if err != nil {
			return err
		}
		source = ptrTo(storedOf(src))
	}
	data, err := pki.RenderLeaf(w, storedOf(signer), source, x.obs.now)
	if err != nil {
		return err
	}
	log := logf.FromContext(ctx).WithValues("secret", w.Secret, "reason", w.Reason)
	if w.Create {
		if err := x.client.Create(ctx, x.managedSecret(w.Secret, data)); err != nil {
			return fmt.Errorf("creating TLS Secret %s: %w", w.Secret, err)
		}
		log.Info("Issued a managed certificate")
		x.event(corev1.EventTypeNormal, eventCertificateCreated, leafNote("created", w))
		return nil
	}
	renewed := old.DeepCopy()
	if renewed.Data == nil {
		renewed.Data = map[string][]byte{}
	}
	maps.Copy(renewed.Data, data)
	if err := x.client.Patch(ctx, renewed, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("renewing TLS Secret %s: %w", w.Secret, err)
	}
	log.Info("Renewed a managed certificate")
	x.event(corev1.EventTypeNormal, eventCertificateRenewed, leafNote("renewed", w))
	return nil
}

// managedSecret is a new managed TLS Secret of the cluster, owned by it.
func (x *executor) managedSecret(name string, data map[string][]byte) *corev1.Secret {
	c := x.cluster()
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: desired.ClusterLabels(c.Name),
			OwnerReferences: []metav1.OwnerReference{controllerRef(c)}},
		Type: corev1.SecretTypeTLS, Data: data,
	}
}

// leafNote is the Event note of a leaf written.
func leafNote(verb string, w pki.Write) string {
	switch w.Source {
	case "":
		return fmt.Sprintf("%s the certificate in Secret %s (%s), signed by the CA in Secret %s, valid for %d days: %s",
			verb, w.Secret, w.Request.CommonName, w.Signer, int(w.Request.Validity/(24*time.Hour)), w.Reason)
	case w.Secret:
		return fmt.Sprintf("%s Secret %s with the trust bundle of the CA in Secret %s, keeping its certificate: %s", verb, w.Secret, w.Signer, w.Reason)
	}
	return fmt.Sprintf("%s Secret %s with the certificate of Secret %s and the trust bundle of the CA in Secret %s: %s", verb, w.Secret, w.Source, w.Signer, w.Reason)
}

// secretAt reads Secret name, uncached; with a version, only at that version: another means
// someone changed it since the pass planned over it, and the write is planned again over what is
// stored now (a conflict, which the pass retries quietly).
func (x *executor) secretAt(ctx context.Context, name, version, changed string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := x.apiReader.Get(ctx, types.NamespacedName{Namespace: x.cluster().Namespace, Name: name}, s); err != nil {
		return nil, fmt.Errorf("reading TLS Secret %s: %w", name, err)
	}
	if version != "" && s.ResourceVersion != version {
		return nil, conflict(name, changed)
	}
	return s, nil
}

func conflict(secret, why string) error {
	return apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, secret, errors.New(why))
}

func ptrTo[T any](v T) *T { return &v }

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
