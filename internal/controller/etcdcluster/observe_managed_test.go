package etcdcluster

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// movedCluster is cluster c under spec.tls.managed, with members on the user's Secrets ("own"
// members: srv and peer, mutual TLS) or on the managed ones.
func movedCluster(own ...bool) *observation {
	c := testCluster()
	c.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Managed: &etcdv1alpha2.ManagedTLS{}}
	c.Status.Observed = membership.ObservedFromSpec(&c.Spec)
	o := &observation{cluster: c, pods: map[string]*corev1.Pod{}, caBundles: map[string]string{"c-server-tls": "sha256:a", "c-peer-tls": "sha256:b"}}
	for i, mine := range own {
		m := member(string(rune('a'+i)), false)
		m.Spec.TLS = memberTLS(c)
		if mine {
			m.Spec.TLS = &etcdv1alpha2.EtcdMemberTLS{ClientServerSecretRef: &corev1.LocalObjectReference{Name: "srv"}, ClientMTLS: true,
				PeerSecretRef: &corev1.LocalObjectReference{Name: "peer"}}
		}
		membership.ApplyTemplate(&m.Spec, c.Status.Observed)
		o.members = append(o.members, m)
	}
	return o
}

// TestMoveSources: while a member still mounts the user's Secrets, each managed leaf starts from
// the one it mounts for its role (the server certificate for the operator's client one); a leaf
// Secret the cluster does not control starts from itself; once every member is moved, none.
func TestMoveSources(t *testing.T) {
	t.Parallel()
	o := movedCluster(false, true)
	_, leaves := managedSecrets(o.cluster, defaultClusterDomain)
	got := o.moveSources(leaves, map[string]*cachedSecret{})
	want := map[string]string{"c-server-tls": "srv", "c-peer-tls": "peer", "c-operator-client-tls": "srv"}
	if !maps.Equal(got, want) {
		t.Errorf("sources %v, want %v", got, want)
	}
	o = movedCluster(false, false)
	reads := map[string]*cachedSecret{"c-server-tls": {controller: "someone-else"}, "c-peer-tls": {controller: o.cluster.UID}}
	if got := o.moveSources(leaves, reads); !maps.Equal(got, map[string]string{"c-server-tls": "c-server-tls"}) {
		t.Errorf("sources of moved members %v", got)
	}
}

// TestTrustLoaded: every member on the managed Secrets and every Pod built on the bundles read
// now; a member on the user's Secrets, or a Pod of an older bundle, is not; a member without a
// Pod runs nothing.
func TestTrustLoaded(t *testing.T) {
	t.Parallel()
	current := func(o *observation, name string) *corev1.Pod {
		m, err := o.member(name)
		if err != nil {
			t.Fatal(err)
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{etcdv1alpha2.AnnotationTemplateHash: o.templateHash(&m.Spec)}}}
	}
	o := movedCluster(false, false)
	o.pods["a"], o.pods["b"] = current(o, "a"), current(o, "b")
	if !o.trustLoaded() {
		t.Error("every Pod on the current bundles: not loaded")
	}
	delete(o.pods, "b")
	if !o.trustLoaded() {
		t.Error("a member without a Pod holds the trust back")
	}
	o.pods["b"] = current(o, "b")
	o.caBundles["c-peer-tls"] = "sha256:new"
	if o.trustLoaded() {
		t.Error("Pods built on an older peer bundle: loaded")
	}
	o = movedCluster(false, true)
	o.pods["a"] = current(o, "a")
	if o.trustLoaded() {
		t.Error("a member on the user's Secrets: loaded")
	}
}

// TestMoveIsARoll: a member of a managed cluster on the user's Secrets is not current; its
// template, as authorised, mounts the managed Secrets under mutual TLS.
func TestMoveIsARoll(t *testing.T) {
	t.Parallel()
	o := movedCluster(true)
	v := o.memberView(&o.members[0], o.cluster.Status.Observed)
	if !v.TLSMoving || v.TemplateCurrent || v.WantHash == "" {
		t.Errorf("member on the user's Secrets: moving %v, current %v, hash %q", v.TLSMoving, v.TemplateCurrent, v.WantHash)
	}
	spec := o.members[0].Spec.DeepCopy()
	applyMemberTemplate(o.cluster, spec, o.cluster.Status.Observed)
	if spec.TLS.ClientServerSecretRef.Name != "c-server-tls" || spec.TLS.PeerSecretRef.Name != "c-peer-tls" || !spec.TLS.ClientMTLS {
		t.Errorf("moved TLS %+v", spec.TLS)
	}
	if o.templateHash(spec) != v.WantHash {
		t.Error("the authorised template's hash is not the one the roll waits for")
	}
	byo := testCluster()
	byo.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "srv"}}}
	if m := o.members[0]; tlsMoving(byo, &m) {
		t.Error("a cluster on its own Secrets moves its members")
	}
}
