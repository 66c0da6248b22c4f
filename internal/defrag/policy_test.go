package defrag

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func corev1Ref(name string) corev1.LocalObjectReference {
	return corev1.LocalObjectReference{Name: name}
}

func TestPrune(t *testing.T) {
	t.Parallel()
	at := func(name string, phase etcdv1alpha2.DefragPhase, done time.Duration) etcdv1alpha2.EtcdDefrag {
		r := run(name, "c", t0, phase)
		if phase != "" {
			r.Status.CompletedAt = &metav1.Time{Time: t0.Add(done)}
		}
		return r
	}
	runs := []etcdv1alpha2.EtcdDefrag{
		at("r1", etcdv1alpha2.DefragPhaseComplete, 1), at("r2", etcdv1alpha2.DefragPhaseFailed, 2),
		at("r3", etcdv1alpha2.DefragPhaseComplete, 3), at("r4", "", 0), at("r5", etcdv1alpha2.DefragPhaseComplete, 5),
	}
	for limit, want := range map[int][]string{0: {"r1", "r2", "r3", "r5"}, 2: {"r1", "r2"}, 3: {"r1"}, 10: nil} {
		got := Prune(runs, limit)
		if len(got) != len(want) {
			t.Errorf("limit %d: Prune = %v, want %v", limit, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("limit %d: Prune = %v, want %v", limit, got, want)
			}
		}
	}
}
