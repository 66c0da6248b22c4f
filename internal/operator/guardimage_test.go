package operator

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// fake.Client stands in for the API server: guardImage's logic is which container it picks and
// when it gives up, not how it reads.
func TestGuardImage(t *testing.T) {
	t.Parallel()
	ownPod := func(containers ...corev1.Container) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "op-0", Namespace: "sys"}, Spec: corev1.PodSpec{Containers: containers}}
	}
	inPod := map[string]string{PodNameEnv: "op-0", PodNamespaceEnv: "sys"}
	for _, tc := range []struct {
		name    string
		flag    string
		env     map[string]string
		pod     *corev1.Pod
		want    string
		wantErr string
	}{
		{name: "flag wins", flag: "ghcr.io/x/op:v1", env: inPod, want: "ghcr.io/x/op:v1"},
		{name: "outside a Pod: unguarded", env: map[string]string{}, want: ""},
		{name: "manager container", env: inPod, pod: ownPod(corev1.Container{Name: "sidecar", Image: "proxy:1"}, corev1.Container{Name: "manager", Image: "ghcr.io/x/op:v2"}), want: "ghcr.io/x/op:v2"},
		{name: "single container of another name", env: inPod, pod: ownPod(corev1.Container{Name: "operator", Image: "ghcr.io/x/op:v3"}), want: "ghcr.io/x/op:v3"},
		{name: "ambiguous", env: inPod, pod: ownPod(corev1.Container{Name: "a", Image: "a:1"}, corev1.Container{Name: "b", Image: "b:1"}), wantErr: "--data-guard-image"},
		{name: "own Pod unreadable", env: inPod, wantErr: "reading the operator's own Pod sys/op-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := fake.NewClientBuilder()
			if tc.pod != nil {
				b = b.WithObjects(tc.pod)
			}
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			got, err := guardImage(context.Background(), Options{DataGuardImage: tc.flag}, lookup, b.Build())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("guardImage = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
