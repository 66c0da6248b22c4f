package etcdcluster_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/pki"
	"github.com/etcd-operator/etcd-operator/test/utils/testpki"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// rotationDwell stands in for pki.CARotationDwell, the kubelet's refresh of mounted Secrets,
// which the fake kubelet does not have: long enough for the polls below to see step 2.
const rotationDwell = 5 * time.Second

// rotationTimeout bounds a rotation of three fake members: two rolls and the dwell.
const rotationTimeout = 2 * convergeTimeout

// caLeaves are the leaf Secrets each managed CA Secret of cluster c signs.
func caLeaves(c string) map[string][]string {
	return map[string][]string{c + "-ca": {c + "-server-tls", c + "-operator-client-tls"}, c + "-peer-ca": {c + "-peer-tls"}}
}

// createTLSCluster creates a cluster of replicas members with the given TLS.
func (w *world) createTLSCluster(name string, replicas int32, tls *etcdv1alpha2.EtcdClusterTLS) {
	w.t.Helper()
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To(replicas), Version: "3.6.5", TLS: tls,
			Storage: etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))}},
	}
	if err := w.createCluster(c); err != nil {
		w.t.Fatal(err)
	}
}

// certsOf parses the certificates under key of Secret s.
func certsOf(s *corev1.Secret, key string) []*x509.Certificate {
	certs, err := pki.ParseCertificates(s.Data[key])
	if err != nil {
		return nil
	}
	return certs
}

// bundleIs reports whether the ca.crt of s holds exactly cas, in any order.
func bundleIs(s *corev1.Secret, cas ...*x509.Certificate) bool {
	got := certsOf(s, "ca.crt")
	return len(got) == len(cas) && !slices.ContainsFunc(cas, func(c *x509.Certificate) bool {
		return !slices.ContainsFunc(got, c.Equal)
	})
}

// leavesOn checks that every leaf of CA Secret ca carries its bundle byte for byte and is
// signed by signer.
func (w *world) leavesOn(ca *corev1.Secret, leaves []string, signer *x509.Certificate) error {
	for _, name := range leaves {
		s, err := w.secret(name)
		if err != nil {
			return err
		}
		if !bytes.Equal(s.Data["ca.crt"], ca.Data["ca.crt"]) {
			return fmt.Errorf("the ca.crt of %s is not the bundle of %s: %w", name, ca.Name, errNotYet)
		}
		if certs := certsOf(s, "tls.crt"); len(certs) == 0 || certs[0].CheckSignatureFrom(signer) != nil {
			return fmt.Errorf("%s is not signed by %s: %w", name, signer.Subject.CommonName, errNotYet)
		}
	}
	return nil
}

// hashHistory records, per member, each authorised template hash in the order seen.
type hashHistory struct {
	mu   sync.Mutex
	seen map[string][]string
	stop context.CancelFunc
	done chan struct{}
}

// recordHashes polls the members of cluster until the test ends or stop is called.
func (w *world) recordHashes(cluster string) *hashHistory {
	ctx, cancel := context.WithCancel(context.Background())
	h := &hashHistory{seen: map[string][]string{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		for ctx.Err() == nil {
			if ms, err := w.members(ctx, cluster); err == nil {
				h.mu.Lock()
				for _, m := range ms {
					hash := m.Annotations[etcdv1alpha2.AnnotationTemplateHash]
					if seen := h.seen[m.Name]; hash != "" && (len(seen) == 0 || seen[len(seen)-1] != hash) {
						h.seen[m.Name] = append(seen, hash)
					}
				}
				h.mu.Unlock()
			}
			time.Sleep(pollInterval / 2)
		}
	}()
	w.t.Cleanup(func() { cancel(); <-h.done })
	return h
}

// twice checks that each of n members was authorised a third template.
func (h *hashHistory) twice(n int) func() error {
	return func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		for m, hashes := range h.seen {
			if len(hashes) < 3 {
				return fmt.Errorf("member %s was authorised %d templates: %w", m, len(hashes), errNotYet)
			}
		}
		if len(h.seen) < n {
			return fmt.Errorf("%d members seen: %w", len(h.seen), errNotYet)
		}
		return nil
	}
}

// changedTwice stops the recording and checks that each of n members' authorised hash changed
// exactly twice, to distinct templates.
func (h *hashHistory) changedTwice(t *testing.T, n int) {
	t.Helper()
	h.stop()
	<-h.done
	if len(h.seen) != n {
		t.Errorf("hashes of %d members seen, want %d: %v", len(h.seen), n, h.seen)
	}
	for m, hashes := range h.seen {
		if len(hashes) != 3 || hashes[0] == hashes[2] {
			t.Errorf("member %s was authorised %q, want its hash to change twice", m, hashes)
		}
	}
}

// progressLog records every reason and message of one condition of a cluster, as "reason:
// message".
type progressLog struct {
	mu   sync.Mutex
	seen []string
}

func (w *world) recordProgressing(name string) *progressLog {
	return w.recordCondition(name, etcdv1alpha2.ConditionProgressing)
}

func (w *world) recordCondition(name, typ string) *progressLog {
	l := &progressLog{}
	stop := w.watchCluster(w.t, name, func(c *etcdv1alpha2.EtcdCluster) {
		if p := meta.FindStatusCondition(c.Status.Conditions, typ); p != nil {
			l.mu.Lock()
			defer l.mu.Unlock()
			if s := p.Reason + ": " + p.Message; !slices.Contains(l.seen, s) {
				l.seen = append(l.seen, s)
			}
		}
	})
	w.t.Cleanup(stop)
	return l
}

func (l *progressLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

// said reports whether some recorded "reason: message" contains part.
func (l *progressLog) said(part string) bool {
	return slices.ContainsFunc(l.all(), func(s string) bool { return strings.Contains(s, part) })
}

// annotate sets annotation key of cluster name to value.
func (w *world) annotate(name, key, value string) {
	w.t.Helper()
	c := w.cluster(name)
	before := c.DeepCopy()
	metav1.SetMetaDataAnnotation(&c.ObjectMeta, key, value)
	if err := k8s.Patch(w.t.Context(), c, client.MergeFrom(before)); err != nil {
		w.t.Fatal(err)
	}
}

// rotationEvents checks one Event of each rotation reason per CA.
func (w *world) rotationEvents(cluster string) func() error {
	return func() error {
		for _, reason := range []string{"CARotationStarted", "CARotationLeavesReissued", "CARotationCompleted"} {
			if n := w.eventCount(cluster, reason); n != 2 {
				return fmt.Errorf("%d %s Events, want one per CA: %w", n, reason, errNotYet)
			}
		}
		return nil
	}
}

// TestManagedCARotation: a rotate-ca value rotates both managed CAs through the three steps of
// docs/tls.md: (1) a new CA beside the old one in each bundle, the leaves on that bundle and
// still the old CA's; (2) the new CA signs, every leaf is its, the bundle unchanged; (3) the
// bundle holds the new CA alone. The members restart twice, the Events tell each step, and the
// same value once more does nothing.
func TestManagedCARotation(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.startController(etcdcluster.WithCARotationDwell(rotationDwell))
	w.createTLSCluster("r", 3, &etcdv1alpha2.EtcdClusterTLS{Managed: &etcdv1alpha2.ManagedTLS{}})
	wait.Eventually(t, convergeTimeout, "r converged", w.converged("r", 3))
	before := w.managedSecrets("r")
	hashes := w.recordHashes("r")
	progress := w.recordProgressing("r")
	w.annotate("r", etcdv1alpha2.AnnotationRotateCA, "2030-q1")

	staged := w.rotationStaged("r", before, "2030-q1")
	w.rotationPromoted("r", staged)
	w.rotationDropped("r", staged)
	wait.Eventually(t, rotationTimeout, "every member restarted without the old CA", hashes.twice(3))
	wait.Eventually(t, rotationTimeout, "r converged after the rotation", w.converged("r", 3))
	hashes.changedTwice(t, 3)
	wait.Eventually(t, convergeTimeout, "one Event of each step per CA", w.rotationEvents("r"))
	for _, step := range []string{"step 1 of 3", "step 2 of 3", membership.ReasonRotatingCA + ": CA rotation of Secret r-ca: step 3 of 3"} {
		if !progress.said(step) {
			t.Errorf("Progressing never said %q; it said %q", step, progress.all())
		}
	}

	after := w.managedSecrets("r")
	w.annotate("r", "example.com/touch", "1") // a pass with the same rotate-ca value
	wait.Consistently(t, 3*time.Second, "no second rotation for the same rotate-ca value", func() error {
		for _, ca := range []string{"r-ca", "r-peer-ca"} {
			if s, err := w.secret(ca); err != nil || s.ResourceVersion != after[ca].ResourceVersion {
				return fmt.Errorf("%s was written again (%w)", ca, err)
			}
		}
		return nil
	})
}

// rotationStaged waits for step 1 of a rotation of cluster's CAs away from the ones in before,
// for token: each CA Secret stages a new CA in next.crt and trusts both, its tls.crt unchanged,
// and its leaves carry that bundle, still signed by the old CA. It returns the CA Secrets then.
func (w *world) rotationStaged(cluster string, before map[string]*corev1.Secret, token string) map[string]*corev1.Secret {
	t := w.t
	t.Helper()
	staged := map[string]*corev1.Secret{}
	for ca, leaves := range caLeaves(cluster) {
		old := leafOf(t, before[ca])
		wait.Eventually(t, rotationTimeout, ca+": step 1, the new CA beside the old one", func() error {
			s, err := w.secret(ca)
			if err != nil {
				return err
			}
			next := certsOf(s, "next.crt")
			if len(next) == 0 || !leafOf(t, s).Equal(old) || !bundleIs(s, old, next[0]) || s.Annotations[etcdv1alpha2.AnnotationRotateCAHandled] != token {
				return fmt.Errorf("%s is not staged: %w", ca, errNotYet)
			}
			staged[ca] = s
			return w.leavesOn(s, leaves, old)
		})
	}
	return staged
}

// rotationPromoted waits for step 2: the staged CA signs every leaf, the bundle byte for byte as
// staged.
func (w *world) rotationPromoted(cluster string, staged map[string]*corev1.Secret) {
	t := w.t
	t.Helper()
	for ca, leaves := range caLeaves(cluster) {
		next := certsOf(staged[ca], "next.crt")[0]
		wait.Eventually(t, rotationTimeout, ca+": step 2, the new CA signs every leaf", func() error {
			s, err := w.secret(ca)
			if err != nil {
				return err
			}
			if !leafOf(t, s).Equal(next) || s.Data["next.crt"] != nil || !bytes.Equal(s.Data["ca.crt"], staged[ca].Data["ca.crt"]) {
				return fmt.Errorf("%s is not promoted with its bundle unchanged: %w", ca, errNotYet)
			}
			return w.leavesOn(s, leaves, next)
		})
	}
}

// rotationDropped waits for step 3: each bundle holds the new CA alone, and so do the leaves'.
func (w *world) rotationDropped(cluster string, staged map[string]*corev1.Secret) {
	t := w.t
	t.Helper()
	for ca, leaves := range caLeaves(cluster) {
		next := certsOf(staged[ca], "next.crt")[0]
		wait.Eventually(t, rotationTimeout, ca+": step 3, the old CA dropped", func() error {
			s, err := w.secret(ca)
			if err != nil {
				return err
			}
			if !bundleIs(s, next) || s.Annotations[etcdv1alpha2.AnnotationCALeavesReissuedAt] != "" {
				return fmt.Errorf("%s still trusts the old CA: %w", ca, errNotYet)
			}
			return w.leavesOn(s, leaves, next)
		})
	}
}

// TestMoveToManagedTLS: a cluster on the user's Secrets (server, with or without the operator's
// client certificate, and peer) moved to spec.tls.managed keeps working and ends on the
// operator's: first the managed bundles trust the user's CAs beside the managed ones and the
// managed leaves carry the user's certificates, the members restart onto them; then the leaves
// are the managed CAs', and the user's CAs leave the bundles. The members restart twice.
func TestMoveToManagedTLS(t *testing.T) {
	t.Parallel()
	for name, mtls := range map[string]bool{"mv": true, "mvs": false} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			w.startController(etcdcluster.WithCARotationDwell(rotationDwell))
			users := w.ownTLSCluster(name, mtls)
			hashes := w.recordHashes(name)
			degraded := w.recordCondition(name, etcdv1alpha2.ConditionDegraded)
			c := w.cluster(name)
			c.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Managed: &etcdv1alpha2.ManagedTLS{}}
			if err := k8s.Update(t.Context(), c); err != nil {
				t.Fatalf("moving to managed TLS: %v", err)
			}
			w.movedOntoTheUsersCertificates(name, users)
			wait.Eventually(t, rotationTimeout, "every member restarted without the user's CAs", hashes.twice(3))
			wait.Eventually(t, rotationTimeout, name+" converged on the managed Secrets", w.converged(name, 3))
			w.onManagedSecrets(name)
			hashes.changedTwice(t, 3)
			for _, reason := range []string{membership.ReasonTLSSecretMissing, membership.ReasonCertificateInvalid} {
				if degraded.said(reason+":") || w.eventCount(name, reason) > 0 {
					t.Errorf("the move reported %s: %q", reason, degraded.all())
				}
			}
		})
	}
}

// ownTLSCluster creates a converged 3-member cluster on the user's own Secrets: <name>-own-server
// (with <name>-own-operator for mutual TLS when mtls) from one CA, <name>-own-peer from another.
// It returns the server and peer Secrets.
func (w *world) ownTLSCluster(name string, mtls bool) map[string]*corev1.Secret {
	t := w.t
	t.Helper()
	userCA, err := testpki.NewCA("user CA")
	if err != nil {
		t.Fatal(err)
	}
	userPeerCA, err := testpki.NewCA("user peer CA")
	if err != nil {
		t.Fatal(err)
	}
	ref := func(n string) *corev1.LocalObjectReference { return &corev1.LocalObjectReference{Name: name + n} }
	w.putSecret(name+"-own-server", tlsData(t, userCA, serverLeaf(name, w.ns), false))
	w.putSecret(name+"-own-peer", tlsData(t, userPeerCA, peerLeaf(name, w.ns), false))
	tls := &etcdv1alpha2.EtcdClusterTLS{Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: ref("-own-server")}, Peer: &etcdv1alpha2.PeerTLS{SecretRef: ref("-own-peer")}}
	if mtls {
		w.putSecret(name+"-own-operator", tlsData(t, userCA, testpki.Leaf{CommonName: "root", Usages: testpki.ClientOnly, NotAfter: time.Now().Add(longValidity)}, false))
		tls.Client.OperatorClientSecretRef = ref("-own-operator")
	}
	w.createTLSCluster(name, 3, tls)
	wait.Eventually(t, convergeTimeout, name+" converged on the user's Secrets", w.converged(name, 3))
	users := map[string]*corev1.Secret{}
	for _, s := range []string{"-own-server", "-own-peer"} {
		if users[s], err = w.secret(name + s); err != nil {
			t.Fatal(err)
		}
	}
	return users
}

// onManagedSecrets checks the end of a move: each managed CA trusts itself alone and signs its
// leaves, and every member mounts the managed Secrets under mutual TLS.
func (w *world) onManagedSecrets(name string) {
	t := w.t
	t.Helper()
	secrets := w.managedSecrets(name)
	for ca, leaves := range caLeaves(name) {
		signer := leafOf(t, secrets[ca])
		if !bundleIs(secrets[ca], signer) {
			t.Errorf("%s trusts %d CAs, want its own alone", ca, len(certsOf(secrets[ca], "ca.crt")))
		}
		if err := w.leavesOn(secrets[ca], leaves, signer); err != nil {
			t.Error(err)
		}
	}
	ms, err := w.members(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if tls := m.Spec.TLS; tls.ClientServerSecretRef.Name != name+"-server-tls" || tls.PeerSecretRef.Name != name+"-peer-tls" || !tls.ClientMTLS {
			t.Errorf("member %s mounts %+v", m.Name, tls)
		}
	}
}

// movedOntoTheUsersCertificates waits for step 1 of a move: each managed bundle holds the user's
// CA and the managed one, and the managed leaves carry the user's certificates (the server's
// standing in for the operator's client certificate).
func (w *world) movedOntoTheUsersCertificates(name string, users map[string]*corev1.Secret) {
	t := w.t
	t.Helper()
	for ca, from := range map[string]string{name + "-ca": "-own-server", name + "-peer-ca": "-own-peer"} {
		wait.Eventually(t, convergeTimeout, ca+" trusts the user's CA beside its own", func() error {
			s, err := w.secret(ca)
			if err != nil {
				return errors.Join(err, errNotYet)
			}
			if !bundleIs(s, leafOf(t, s), certsOf(users[from], "ca.crt")[0]) {
				return fmt.Errorf("%s does not trust both CAs: %w", ca, errNotYet)
			}
			return nil
		})
	}
	for leaf, from := range map[string]string{name + "-server-tls": "-own-server", name + "-operator-client-tls": "-own-server", name + "-peer-tls": "-own-peer"} {
		wait.Eventually(t, convergeTimeout, leaf+" starts on the user's certificate", func() error {
			s, err := w.secret(leaf)
			if err != nil {
				return errors.Join(err, errNotYet)
			}
			if !bytes.Equal(s.Data["tls.crt"], users[from].Data["tls.crt"]) || !bytes.Equal(s.Data["tls.key"], users[from].Data["tls.key"]) {
				return fmt.Errorf("%s does not carry the certificate of %s: %w", leaf, from, errNotYet)
			}
			return nil
		})
	}
}
