package framework

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/test/utils/promserver"
)

func TestPodScrapeTargets(t *testing.T) {
	t.Parallel()
	pod := func(name, ip string, phase corev1.PodPhase, port string) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"etcd-operator.cozystack.io/cluster": "c"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Ports: []corev1.ContainerPort{
				{Name: "client", ContainerPort: 2379}, {Name: port, ContainerPort: 2381}}}}},
			Status: corev1.PodStatus{PodIP: ip, Phase: phase},
		}
	}
	pods := []corev1.Pod{
		pod("c-b", "10.244.1.3", corev1.PodRunning, "metrics"),
		pod("c-a", "10.244.2.3", corev1.PodPending, "metrics"), // started, not Ready yet: scraped, as a PodMonitor does
		pod("c-noip", "", corev1.PodPending, "metrics"),
		pod("c-done", "10.244.1.9", corev1.PodFailed, "metrics"),
		pod("c-noport", "10.244.1.8", corev1.PodRunning, "peer"),
	}
	got := PodScrapeTargets(pods, "metrics", map[string]string{"cluster": "etcd-operator.cozystack.io/cluster", "absent": "no-such-label"})
	want := []promserver.TargetGroup{
		{Targets: []string{"10.244.2.3:2381"}, Labels: map[string]string{"namespace": "ns", "pod": "c-a", "cluster": "c"}},
		{Targets: []string{"10.244.1.3:2381"}, Labels: map[string]string{"namespace": "ns", "pod": "c-b", "cluster": "c"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PodScrapeTargets (-want +got):\n%s", diff)
	}
}
