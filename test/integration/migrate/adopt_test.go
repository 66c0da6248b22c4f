package migrate_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/adopt"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// The dry run inspects the real member, plans its adoption and writes nothing.
func TestDryRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := newWrites(-1)
	out, err := e.run(t, e.options(false), w)
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	t.Logf("plan:\n%s", out)
	if w.n != 0 {
		t.Fatalf("the dry run wrote %d times: %v", w.n, w.log)
	}
	for _, want := range []string{"adopt 1 members", "orphan-delete", "Cut the client Service over", "⚠ SECURITY PeerAutoTLS"} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan lacks %q", want)
		}
	}
}

// --apply refuses while the legacy controller runs, and writes nothing.
func TestGateRefuses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := legacyfixture.ControllerDeployment("legacy:v1", 1)
	d.Namespace = e.ns
	if err := k8sClient.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	w := newWrites(-1)
	_, err := e.run(t, e.options(true), w)
	if code := invocation.Code(err); code != invocation.ExitRefused || !strings.Contains(fmt.Sprint(err), "replicas 1") {
		t.Fatalf("Run = %v (exit %d), want a refusal naming the running controller", err, code)
	}
	if w.n != 0 {
		t.Fatalf("a refused run wrote %d times: %v", w.n, w.log)
	}
}

// The adoption's end state is the one of docs/migration.md, "Adoption steps", and a second
// run writes nothing.
func TestAdoptThenRerunWritesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := newWrites(-1)
	if out, err := e.run(t, e.options(true), w); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	t.Logf("%d writes: %s", w.n, strings.Join(w.log, "\n"))
	e.assertAdopted(t)
	again := newWrites(-1)
	if out, err := e.run(t, e.options(true), again); err != nil {
		t.Fatalf("second apply: %v\n%s", err, out)
	}
	if again.n != 0 {
		t.Fatalf("a second run wrote %d times: %v", again.n, again.log)
	}
}

// A run killed after any write of the adoption is completed by the next run, to the same end
// state as an uninterrupted one.
func TestInterruptedAtEveryWrite(t *testing.T) {
	t.Parallel()
	ref := newEnv(t)
	w := newWrites(-1)
	if out, err := ref.run(t, ref.options(true), w); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	want := ref.endState(t)
	for n := 0; n < w.n; n++ {
		t.Run(fmt.Sprintf("killed after write %d of %d (%s)", n, w.n, nextWrite(w.log, n)), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if _, err := e.run(t, e.options(true), newWrites(n)); err == nil {
				t.Fatal("the interrupted run reported success")
			}
			if out, err := e.run(t, e.options(true), newWrites(-1)); err != nil {
				t.Fatalf("the resuming run: %v\n%s", err, out)
			}
			if got := e.endState(t); got != want {
				t.Fatalf("end state differs from an uninterrupted run's:\n got %s\nwant %s", got, want)
			}
			e.assertAdopted(t)
		})
	}
}

func nextWrite(log []string, n int) string {
	if n < len(log) {
		return log[n]
	}
	return "none"
}

// assertAdopted checks the objects every step leaves.
func (e *env) assertAdopted(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	c := &etcdv1alpha2.EtcdCluster{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: clusterName}, c); err != nil {
		t.Fatal(err)
	}
	st, err := etcdStatus(t, e)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status.ClusterID != etcdclient.FormatID(st.ClusterID) || c.Status.ClusterToken != legacy.ClusterToken(clusterName, e.ns) {
		t.Errorf("cluster status = %+v, want etcd's cluster ID %x and the legacy token", c.Status, st.ClusterID)
	}
	if _, ok := c.Annotations[etcdv1alpha2.AnnotationAdoptionInProgress]; ok || c.Annotations[etcdv1alpha2.AnnotationMigratedFrom] == "" {
		t.Errorf("cluster annotations = %v", c.Annotations)
	}
	m := &etcdv1alpha2.EtcdMember{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "etcd-0"}, m); err != nil {
		t.Fatal(err)
	}
	if m.Status.MemberID != etcdclient.FormatID(st.ID) || !m.Status.IsVoter || m.Status.PVCName != "data-etcd-0" || !adopt.ControlledBy(m, c.UID) {
		t.Errorf("member = %+v %+v", m.ObjectMeta, m.Status)
	}
	pod := &corev1.Pod{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "etcd-0"}, pod); err != nil {
		t.Fatal(err)
	}
	if !adopt.ControlledBy(pod, m.UID) || pod.Labels[etcdv1alpha2.LabelRole] != etcdv1alpha2.RoleVoter ||
		pod.Annotations[etcdv1alpha2.AnnotationTemplateHash] != m.Annotations[etcdv1alpha2.AnnotationTemplateHash] {
		t.Errorf("Pod metadata = %+v", pod.ObjectMeta)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "data-etcd-0"}, pvc); err != nil {
		t.Fatalf("the PVC: %v", err)
	}
	// The legacy PVCs outlived their cluster; the translation keeps that (reclaimPolicy Retain),
	// and the PVC then has no owner.
	owned := c.Spec.Storage.ReclaimPolicy != etcdv1alpha2.ReclaimPolicyRetain
	if adopt.ControlledBy(pvc, c.UID) != owned || len(pvc.OwnerReferences) > 1 || pvc.Annotations[etcdv1alpha2.AnnotationMemberUID] != string(m.UID) {
		t.Errorf("PVC metadata = %+v", pvc.ObjectMeta)
	}
	svc := &corev1.Service{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: clusterName}, svc); err != nil || !adopt.ControlledBy(svc, c.UID) || svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service %s = %+v, %v; want the native headless one", clusterName, svc.ObjectMeta, err)
	}
	headless := &corev1.Service{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "etcd-headless"}, headless); err != nil || len(headless.OwnerReferences) != 1 || headless.OwnerReferences[0].UID != m.UID {
		t.Errorf("legacy headless Service owners = %+v, %v", headless.OwnerReferences, err)
	}
	e.assertGone(t, &appsv1.StatefulSet{}, clusterName)
	e.assertGone(t, &corev1.ConfigMap{}, legacy.StateConfigMapName(clusterName))
	lc := &unstructured.Unstructured{}
	lc.SetGroupVersionKind(legacy.EtcdClusterGVK)
	e.assertGone(t, lc, clusterName)
}

func (e *env) assertGone(t *testing.T, obj client.Object, name string) {
	t.Helper()
	if err := k8sClient.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: name}, obj); !apierrors.IsNotFound(err) {
		t.Errorf("%T %s still exists (%v)", obj, name, err)
	}
}

func etcdStatus(t *testing.T, e *env) (etcdclient.Status, error) {
	t.Helper()
	conn, err := etcdclient.New(t.Context(), etcdclient.Config{Endpoints: []string{e.etcd.Members[0].ClientURL}})
	if err != nil {
		return etcdclient.Status{}, err
	}
	defer func() { _ = conn.Close() }()
	return conn.Status(t.Context(), e.etcd.Members[0].ClientURL)
}

// endState renders what the adoption leaves in the namespace, without what differs between
// namespaces and runs (UIDs, resource versions, the IDs of each test's own etcd).
func (e *env) endState(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	var lines []string
	add := func(l client.ObjectList, describe func(client.Object) string) {
		if err := k8sClient.List(ctx, l, client.InNamespace(e.ns)); err != nil {
			t.Fatal(err)
		}
		items, err := metaItems(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range items {
			lines = append(lines, fmt.Sprintf("%T %s %s owners=%s %s", o, o.GetName(), keys(o.GetLabels()), owners(o.GetOwnerReferences()), describe(o)))
		}
	}
	none := func(client.Object) string { return "" }
	add(&etcdv1alpha2.EtcdClusterList{}, func(o client.Object) string {
		c := o.(*etcdv1alpha2.EtcdCluster) //nolint:forcetypeassert // the list's own type
		spec, _ := json.Marshal(c.Spec)
		return fmt.Sprintf("ann=%s spec=%s token=%t", keys(c.Annotations), spec, c.Status.ClusterToken != "")
	})
	add(&etcdv1alpha2.EtcdMemberList{}, func(o client.Object) string {
		m := o.(*etcdv1alpha2.EtcdMember) //nolint:forcetypeassert // the list's own type
		spec, _ := json.Marshal(m.Spec)
		return fmt.Sprintf("ann=%s hash=%s spec=%s voter=%t", keys(m.Annotations), m.Annotations[etcdv1alpha2.AnnotationTemplateHash], spec, m.Status.IsVoter)
	})
	add(&corev1.PodList{}, func(o client.Object) string { return "ann=" + keys(o.GetAnnotations()) })
	add(&corev1.PersistentVolumeClaimList{}, func(o client.Object) string { return "ann=" + keys(o.GetAnnotations()) })
	add(&corev1.ServiceList{}, none)
	add(&corev1.ConfigMapList{}, none)
	add(&appsv1.StatefulSetList{}, none)
	add(&corev1.SecretList{}, none)
	sort.Strings(lines)
	return strings.ReplaceAll(strings.Join(lines, "\n"), e.ns, "NS")
}

func keys(m map[string]string) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return "[" + strings.Join(ks, ",") + "]"
}

func owners(refs []metav1.OwnerReference) string {
	var out []string
	for _, r := range refs {
		out = append(out, fmt.Sprintf("%s/%s(controller=%t)", r.Kind, r.Name, r.Controller != nil && *r.Controller))
	}
	sort.Strings(out)
	return "[" + strings.Join(out, ",") + "]"
}
