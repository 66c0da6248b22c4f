package adopt

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

func fixture(tb testing.TB) *legacyfixture.Set {
	tb.Helper()
	s, err := legacyfixture.Build(legacyfixture.Options{Name: "etcd", Namespace: "ns", Replicas: 1})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func member() *etcdv1alpha2.EtcdMember {
	return &etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-0", Namespace: "ns", UID: "member-uid",
			Annotations: map[string]string{etcdv1alpha2.AnnotationTemplateHash: "h1"}},
		Spec:   etcdv1alpha2.EtcdMemberSpec{ClusterName: "etcd"},
		Status: etcdv1alpha2.EtcdMemberStatus{IsVoter: true, PodName: "etcd-0", PVCName: "data-etcd-0"},
	}
}

func cluster(policy etcdv1alpha2.ReclaimPolicy) *etcdv1alpha2.EtcdCluster {
	c := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "ns", UID: "cluster-uid"}}
	c.Spec.Storage.ReclaimPolicy = policy
	return c
}

// A legacy Pod is re-owned once; the re-owned Pod is done: step 6 writes it once.
func TestReownPod(t *testing.T) {
	pod := fixture(t).ExpectedPods()[0]
	m := member()
	want := ReownPod(pod, m)
	if want == nil {
		t.Fatal("a legacy Pod needs re-owning")
	}
	ctrl := metav1.GetControllerOf(want)
	if ctrl == nil || ctrl.UID != m.UID || ctrl.Kind != "EtcdMember" || len(want.OwnerReferences) != 1 {
		t.Fatalf("ownerReferences = %+v, want the member as the only controller", want.OwnerReferences)
	}
	for k, v := range map[string]string{etcdv1alpha2.LabelCluster: "etcd", etcdv1alpha2.LabelRole: etcdv1alpha2.RoleVoter, etcdv1alpha2.LabelComponent: "etcd-0", legacy.LabelInstance: "etcd"} {
		if want.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, want.Labels[k], v)
		}
	}
	if want.Annotations[etcdv1alpha2.AnnotationTemplateHash] != "h1" {
		t.Errorf("template-hash = %q", want.Annotations[etcdv1alpha2.AnnotationTemplateHash])
	}
	if !equalSpec(want, pod) {
		t.Error("re-owning changed the Pod spec")
	}
	if again := ReownPod(want, m); again != nil {
		t.Fatalf("a re-owned Pod is re-owned again: %+v", again.ObjectMeta)
	}
	// The garbage collector may strip the StatefulSet reference first: still one write.
	pod.OwnerReferences = nil
	if ReownPod(pod, m) == nil {
		t.Fatal("a Pod without owner needs re-owning")
	}
}

func equalSpec(a, b *corev1.Pod) bool { return reflect.DeepEqual(a.Spec, b.Spec) }

func TestReownPVC(t *testing.T) {
	for _, tt := range []struct {
		policy    etcdv1alpha2.ReclaimPolicy
		wantOwner bool
	}{{etcdv1alpha2.ReclaimPolicyDelete, true}, {"", true}, {etcdv1alpha2.ReclaimPolicyRetain, false}} {
		t.Run(string(tt.policy), func(t *testing.T) {
			pvc := fixture(t).ExpectedPVCs()[0]
			pvc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "etcd", UID: "sts", Controller: ptr.To(true)}}
			m, c := member(), cluster(tt.policy)
			want := ReownPVC(pvc, m, c)
			if want == nil {
				t.Fatal("a legacy PVC needs re-owning")
			}
			if got := ControlledBy(want, c.UID); got != tt.wantOwner || (!tt.wantOwner && len(want.OwnerReferences) != 0) {
				t.Fatalf("ownerReferences = %+v, want cluster owner %v and no legacy one", want.OwnerReferences, tt.wantOwner)
			}
			if want.Annotations[etcdv1alpha2.AnnotationMemberUID] != "member-uid" || want.Labels[etcdv1alpha2.LabelComponent] != "etcd-0" {
				t.Fatalf("metadata = %+v", want.ObjectMeta)
			}
			if ReownPVC(want, m, c) != nil {
				t.Fatal("a re-owned PVC is re-owned again")
			}
		})
	}
}

func TestHeadlessOwners(t *testing.T) {
	a, b := member(), member()
	b.Name, b.UID = "etcd-1", "uid-1"
	got := HeadlessOwners([]etcdv1alpha2.EtcdMember{*b, *a})
	if len(got) != 2 || got[0].Name != "etcd-0" || got[1].Name != "etcd-1" {
		t.Fatalf("HeadlessOwners = %+v, want both members sorted", got)
	}
	for _, r := range got {
		if ptr.Deref(r.Controller, false) {
			t.Fatalf("reference %s is a controller; the Service must not be controlled by one member", r.Name)
		}
	}
}

func TestIsLegacyService(t *testing.T) {
	s := fixture(t)
	if !IsLegacyService(s.ClientService, "etcd") {
		t.Fatal("the legacy client Service is not recognised")
	}
	native := &corev1.Service{Spec: corev1.ServiceSpec{Selector: map[string]string{etcdv1alpha2.LabelCluster: "etcd"}}}
	if IsLegacyService(native, "etcd") {
		t.Fatal("the native headless Service is taken for the legacy one")
	}
	if IsLegacyService(s.ClientService, "other") {
		t.Fatal("another cluster's legacy Service is taken for this one's")
	}
}

func TestCheckOwnCluster(t *testing.T) {
	c := cluster("")
	if CheckOwnCluster(c) == nil {
		t.Fatal("a foreign EtcdCluster of the same name is accepted")
	}
	c.Annotations = map[string]string{etcdv1alpha2.AnnotationMigratedFrom: "etcd.aenix.io/v1alpha1"}
	if err := CheckOwnCluster(c); err != nil {
		t.Fatal(err)
	}
	if StatusPrefilled(c) {
		t.Fatal("status without clusterID counts as prefilled")
	}
	c.Status.ClusterID = "abc"
	if !StatusPrefilled(c) {
		t.Fatal("status with clusterID does not count as prefilled")
	}
}
