package phase

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

func TestGateDecision(t *testing.T) {
	pod := func(name string, phase corev1.PodPhase) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: phase}}
	}
	tests := []struct {
		name     string
		replicas *int32
		absent   bool
		pods     []corev1.Pod
		want     string
	}{
		{name: "absent", absent: true},
		{name: "scaled to 0, no Pods", replicas: ptr.To[int32](0)},
		{name: "scaled to 0, Pods ended", replicas: ptr.To[int32](0), pods: []corev1.Pod{pod("a", corev1.PodSucceeded), pod("b", corev1.PodFailed)}},
		{name: "scaled to 0, a Pod terminating", replicas: ptr.To[int32](0), pods: []corev1.Pod{pod("a", corev1.PodRunning)}, want: "Pods a have not ended"},
		{name: "running", replicas: ptr.To[int32](1), want: "replicas 1"},
		{name: "replicas unset means 1", want: "replicas 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := legacyfixture.ControllerDeployment("img", 0)
			d.Spec.Replicas = tt.replicas
			if tt.absent {
				d = nil
			}
			got := GateDecision("ns/name", d, tt.pods)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("GateDecision() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestVersionLess(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{{"3.5.9", "3.5.12", true}, {"3.5.12", "3.5.9", false}, {"3.6.0", "3.5.20", false}, {"3.5.0", "3.5.0", false}} {
		if got := versionLess(tt.a, tt.b); got != tt.want {
			t.Errorf("versionLess(%s, %s) = %v", tt.a, tt.b, got)
		}
	}
}
