package etcdmember

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func TestPodOwnedBy(t *testing.T) {
	t.Parallel()
	m := member()
	otherUID := func(p *corev1.Pod) { p.OwnerReferences[0].UID = "previous-member" }
	notController := func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil }
	noOwner := func(p *corev1.Pod) { p.OwnerReferences = nil }
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"controlled by the member":                     {pod(true), true},
		"controlled by a previous member of that name": {pod(true, otherUID), false},
		"owned but not controlled":                     {pod(true, notController), false},
		"no owner":                                     {pod(true, noOwner), false},
	} {
		if got := podOwnedBy(tc.pod, m); got != tc.want {
			t.Errorf("%s: podOwnedBy = %v, want %v", name, got, tc.want)
		}
	}
}

func TestPVCOwnedBy(t *testing.T) {
	t.Parallel()
	m := member()
	pvc := func(uid string, controller *metav1.OwnerReference) *corev1.PersistentVolumeClaim {
		p := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-" + testMember}}
		if uid != "" {
			p.Annotations = map[string]string{etcdv1alpha2.AnnotationMemberUID: uid}
		}
		if controller != nil {
			p.OwnerReferences = []metav1.OwnerReference{*controller}
		}
		return p
	}
	clusterRef := func(uid string) *metav1.OwnerReference {
		return &metav1.OwnerReference{Kind: "EtcdCluster", Name: testCluster, UID: types.UID(uid), Controller: ptr.To(true)}
	}
	for name, tc := range map[string]struct {
		pvc  *corev1.PersistentVolumeClaim
		want bool
	}{
		"Retain: annotation only":                {pvc(testMemberUID, nil), true},
		"Delete: owned by the member's cluster":  {pvc(testMemberUID, clusterRef(testClusterUID)), true},
		"another member's PVC":                   {pvc("someone-else", nil), false},
		"no member-uid annotation":               {pvc("", nil), false},
		"controlled by a cluster of another UID": {pvc(testMemberUID, clusterRef("other-cluster")), false},
		"controlled by something else entirely":  {pvc(testMemberUID, &metav1.OwnerReference{Kind: "StatefulSet", UID: testClusterUID, Controller: ptr.To(true)}), false},
	} {
		if got := pvcOwnedBy(tc.pvc, m); got != tc.want {
			t.Errorf("%s: pvcOwnedBy = %v, want %v", name, got, tc.want)
		}
	}
}

func TestPredecessorPVC(t *testing.T) {
	t.Parallel()
	m := member()
	pvc := func(opts ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		p := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{
			Name:            "data-" + testMember,
			Labels:          map[string]string{etcdv1alpha2.LabelCluster: testCluster, etcdv1alpha2.LabelComponent: testMember},
			Annotations:     map[string]string{etcdv1alpha2.AnnotationMemberUID: "earlier-member"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "EtcdCluster", Name: testCluster, UID: testClusterUID, Controller: ptr.To(true)}},
		}}
		for _, o := range opts {
			o(p)
		}
		return p
	}
	for name, tc := range map[string]struct {
		pvc  *corev1.PersistentVolumeClaim
		want bool
	}{
		"an earlier member of this name in this cluster (Delete)": {pvc(), true},
		"an earlier member of this name in this cluster (Retain)": {pvc(func(p *corev1.PersistentVolumeClaim) { p.OwnerReferences = nil }), true},
		"the member's own":                       {pvc(func(p *corev1.PersistentVolumeClaim) { p.Annotations[etcdv1alpha2.AnnotationMemberUID] = testMemberUID }), false},
		"no member-uid":                          {pvc(func(p *corev1.PersistentVolumeClaim) { p.Annotations = nil }), false},
		"another member's label":                 {pvc(func(p *corev1.PersistentVolumeClaim) { p.Labels[etcdv1alpha2.LabelComponent] = "other" }), false},
		"another cluster's label":                {pvc(func(p *corev1.PersistentVolumeClaim) { p.Labels[etcdv1alpha2.LabelCluster] = "other" }), false},
		"controlled by a cluster of another UID": {pvc(func(p *corev1.PersistentVolumeClaim) { p.OwnerReferences[0].UID = "other" }), false},
	} {
		if got := predecessorPVC(tc.pvc, m); got != tc.want {
			t.Errorf("%s: predecessorPVC = %v, want %v", name, got, tc.want)
		}
	}
	afresh := member(func(m *etcdv1alpha2.EtcdMember) { m.GenerateName = testCluster + "-" })
	if predecessorPVC(pvc(), afresh) {
		t.Error("a member named by GenerateName waits for an earlier member's PVC instead of refusing it")
	}
}

func TestPredecessorPod(t *testing.T) {
	t.Parallel()
	m := member()
	labelled := func(p *corev1.Pod) { p.Labels = map[string]string{etcdv1alpha2.LabelCluster: testCluster} }
	earlier := func(p *corev1.Pod) { p.OwnerReferences[0].UID = "earlier-member" }
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"controlled by an earlier member of this name": {pod(true, labelled, earlier), true},
		"the member's own":                       {pod(true, labelled), false},
		"another cluster's":                      {pod(true, earlier), false},
		"controlled by something else":           {pod(true, labelled, earlier, func(p *corev1.Pod) { p.OwnerReferences[0].Kind = "StatefulSet" }), false},
		"controlled by a member of another name": {pod(true, labelled, earlier, func(p *corev1.Pod) { p.OwnerReferences[0].Name = "other" }), false},
	} {
		if got := predecessorPod(tc.pod, m); got != tc.want {
			t.Errorf("%s: predecessorPod = %v, want %v", name, got, tc.want)
		}
	}
}

func TestClassifyParent(t *testing.T) {
	t.Parallel()
	cluster := func(uid string, deleting bool) *etcdv1alpha2.EtcdCluster {
		c := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: testCluster, UID: types.UID(uid)}}
		if deleting {
			c.DeletionTimestamp = ptr.To(metav1.Now())
		}
		return c
	}
	noOwner := member(func(m *etcdv1alpha2.EtcdMember) { m.OwnerReferences = nil })
	for name, tc := range map[string]struct {
		m      *etcdv1alpha2.EtcdMember
		parent *etcdv1alpha2.EtcdCluster
		want   parentState
	}{
		"present":  {member(), cluster(testClusterUID, false), parentPresent},
		"deleting": {member(), cluster(testClusterUID, true), parentDeleting},
		"a namesake with another UID: own is gone": {member(), cluster("new", false), parentGone},
		"member without owner reference: by name":  {noOwner, cluster("any", false), parentPresent},
	} {
		if got := classifyParent(tc.m, tc.parent); got != tc.want {
			t.Errorf("%s: classifyParent = %v, want %v", name, got, tc.want)
		}
	}
}

func TestMetadataPatch(t *testing.T) {
	t.Parallel()
	obj := &metav1.ObjectMeta{
		Labels:      map[string]string{"a": "1", etcdv1alpha2.LabelRole: etcdv1alpha2.RoleVoter, "someone-elses": "x"},
		Annotations: map[string]string{"n": "1", etcdv1alpha2.AnnotationTemplateHash: "h"},
	}
	for name, tc := range map[string]struct {
		labels, annotations map[string]string
		remove              []string
		want                map[string]any
	}{
		"nothing to change": {
			labels: map[string]string{"a": "1", etcdv1alpha2.LabelRole: etcdv1alpha2.RoleVoter}, annotations: map[string]string{"n": "1"},
			want: nil,
		},
		"a changed and a new key; unknown keys left alone": {
			labels: map[string]string{"a": "2", "b": "1"}, annotations: map[string]string{"n": "1", "m": "2"},
			want: map[string]any{"metadata": map[string]any{
				"labels":      map[string]any{"a": "2", "b": "1"},
				"annotations": map[string]any{"m": "2"},
			}},
		},
		"role removed from a learner": {
			labels: map[string]string{"a": "1"}, remove: []string{etcdv1alpha2.LabelRole},
			want: map[string]any{"metadata": map[string]any{"labels": map[string]any{etcdv1alpha2.LabelRole: nil}}},
		},
		"removing an absent key writes nothing": {
			labels: map[string]string{"a": "1"}, remove: []string{"absent"},
			want: nil,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, metadataPatch(obj, tc.labels, tc.annotations, tc.remove)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPVCToMember(t *testing.T) {
	t.Parallel()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "data-" + testMember, Labels: map[string]string{
		etcdv1alpha2.LabelComponent: testMember, etcdv1alpha2.LabelManagedBy: etcdv1alpha2.ManagedByOperator, etcdv1alpha2.LabelCluster: testCluster,
	}}}
	got := pvcToMember(context.Background(), pvc)
	if len(got) != 1 || got[0].Name != testMember || got[0].Namespace != testNS {
		t.Errorf("pvcToMember = %v, want %s/%s", got, testNS, testMember)
	}
	pvc.Labels[etcdv1alpha2.LabelManagedBy] = "helm"
	if got := pvcToMember(context.Background(), pvc); len(got) != 0 {
		t.Errorf("a PVC managed by someone else mapped to %v", got)
	}
}

func TestClusterChangesThatMatter(t *testing.T) {
	t.Parallel()
	base := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: testCluster}}
	p := clusterChangesThatMatter()
	for name, tc := range map[string]struct {
		mutate func(*etcdv1alpha2.EtcdCluster)
		want   bool
	}{
		"status-only write":  {func(c *etcdv1alpha2.EtcdCluster) { c.Status.ReadyMembers = 3 }, false},
		"cluster ID latched": {func(c *etcdv1alpha2.EtcdCluster) { c.Status.ClusterID = "c1" }, true},
		"deletion started":   {func(c *etcdv1alpha2.EtcdCluster) { c.DeletionTimestamp = ptr.To(metav1.Now()) }, true},
		"spec change":        {func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Version = "3.6.6" }, false},
	} {
		n := base.DeepCopy()
		tc.mutate(n)
		if got := p.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: n}); got != tc.want {
			t.Errorf("%s: predicate = %v, want %v", name, got, tc.want)
		}
	}
}

func TestPodEndpoints(t *testing.T) {
	t.Parallel()
	withIP := func(ip string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Status.PodIP = ip } }
	foreign := pod(true, withIP("10.0.0.9"), func(p *corev1.Pod) { p.OwnerReferences[0].Kind = "StatefulSet" })
	gone := pod(true, withIP("10.0.0.8"), func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) })
	pods := []corev1.Pod{*pod(true, withIP("10.0.0.2")), *pod(true, withIP("fd00::1")), *pod(true), *foreign, *gone, *pod(true, withIP("10.0.0.1"))}
	want := []string{"http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://[fd00::1]:2379"}
	if diff := cmp.Diff(want, podEndpoints(pods, false)); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
	if got := podEndpoints(pods[:1], true); len(got) != 1 || got[0] != "https://10.0.0.2:2379" {
		t.Errorf("TLS endpoints = %v", got)
	}
}
