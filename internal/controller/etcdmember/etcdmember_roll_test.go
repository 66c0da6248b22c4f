package etcdmember

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func TestDecideRestart(t *testing.T) {
	t.Parallel()
	podWith := func(hash string, opts ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: testMember, Annotations: map[string]string{}}}
		if hash != "" {
			p.Annotations[etcdv1alpha2.AnnotationTemplateHash] = hash
		}
		for _, o := range opts {
			o(p)
		}
		return p
	}
	memory := func(m *etcdv1alpha2.EtcdMember) { m.Spec.Storage.Medium = etcdv1alpha2.StorageMediumMemory }
	authorised := withAnnotation(etcdv1alpha2.AnnotationTemplateHash, "new")
	cases := []struct {
		name    string
		member  *etcdv1alpha2.EtcdMember
		pod     *corev1.Pod
		built   string
		restart bool
		why     string // substring of why; empty for none
	}{
		{"nothing authorised: never restarted", member(), podWith("old"), "new", false, ""},
		{"the Pod runs the authorised hash", member(authorised), podWith("new"), "new", false, ""},
		{"authorised, the Pod runs another hash, a new Pod would match: restart", member(authorised), podWith("old"), "new", true,
			"rolling update: the Pod runs template old, template new is authorised; it is recreated on PVC data-" + testMember},
		{"a Pod without a hash is restarted too", member(authorised), podWith(""), "new", true, "rolling update"},
		{"a new Pod would carry another hash: held, said why", member(authorised), podWith("old"), "other", false,
			"template new is authorised, but a Pod built now would carry template other"},
		{"a Memory member is never restarted", member(authorised, memory), podWith("old"), "new", false, ""},
		{"a terminating Pod is left to go", member(authorised), podWith("old", func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) }), "new", false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := decideRestart(tc.member, tc.pod, tc.built)
			if d.restart != tc.restart {
				t.Errorf("restart = %v, want %v (%s)", d.restart, tc.restart, d.why)
			}
			if (tc.why == "") != (d.why == "") || !strings.Contains(d.why, tc.why) {
				t.Errorf("why = %q, want it to contain %q", d.why, tc.why)
			}
		})
	}
}
