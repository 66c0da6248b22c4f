package framework

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TestDumpNamespace dumps a namespace of a real API server (envtest, with the project's CRDs)
// and checks the files: events in order, Pods, the project's objects found through discovery,
// and a log file that says why there is no log (envtest has no kubelet), and no Secret.
func TestDumpNamespace(t *testing.T) {
	t.Parallel()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("skipping the dump test: KUBEBUILDER_ASSETS is unset (run it with `make test`)")
	}
	_, file, _, _ := runtime.Caller(0)
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(filepath.Dir(file), "..", "..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	s := &Suite{}
	if err := s.NewClients(cfg); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	const ns = "dump-test"
	if _, err := s.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-abc", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "quay.io/coreos/etcd:v3.6.16"}}},
	}
	if _, err := s.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "root-credentials", Namespace: ns}, StringData: map[string]string{"password": "canary-s3cr3t"}}
	if _, err := s.Kube.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Minute).Truncate(time.Second)
	for i, reason := range []string{"Second", "First"} {
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "ev-" + reason, Namespace: ns},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: pod.Name, Namespace: ns},
			Reason:         reason,
			Message:        "event " + reason,
			Type:           corev1.EventTypeNormal,
			// Created out of order: the dump must sort by time.
			LastTimestamp: metav1.NewTime(base.Add(time.Duration(1-i) * time.Second)),
		}
		if _, err := s.Kube.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cluster := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": APIGroup + "/v1alpha2",
		"kind":       "EtcdCluster",
		"metadata":   map[string]any{"name": "etcd", "namespace": ns},
		"spec":       map[string]any{"replicas": int64(3), "version": "3.6.16"},
	}}
	gvr := schema.GroupVersionResource{Group: APIGroup, Version: "v1alpha2", Resource: "etcdclusters"}
	if _, err := s.Dynamic.Resource(gvr).Namespace(ns).Create(ctx, cluster, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating an EtcdCluster: %v", err)
	}

	dir := t.TempDir()
	if err := s.DumpNamespace(ctx, ns, dir, true); err != nil {
		t.Fatalf("DumpNamespace: %v", err)
	}
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("dump lacks %s: %v", name, err)
		}
		return string(b)
	}
	if got := read("etcdclusters.yaml"); !strings.Contains(got, "kind: EtcdCluster") || !strings.Contains(got, "version: 3.6.16") {
		t.Errorf("etcdclusters.yaml does not hold the cluster:\n%s", got)
	}
	read("etcdmembers.yaml") // listed even when empty, so "no members" is visible
	if got := read("pods.yaml"); !strings.Contains(got, "name: etcd-abc") {
		t.Errorf("pods.yaml lacks the Pod:\n%s", got)
	}
	// The API server answers an empty log for a Pod no kubelet runs.
	if got := read("logs/etcd-abc/etcd.log"); got != "(empty log)\n" && !strings.HasPrefix(got, "(no log:") {
		t.Errorf("log of a container that never ran = %q, want a note saying why it is empty", got)
	}
	events := read("events.txt")
	if first, second := strings.Index(events, "First"), strings.Index(events, "Second"); first < 0 || second < 0 || first > second {
		t.Errorf("events.txt is not in time order:\n%s", events)
	}
	read("events.yaml")
	var files []string
	if err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), "canary-s3cr3t") {
			t.Errorf("%s leaks a Secret value", path)
		}
	}
}
