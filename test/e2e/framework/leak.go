//go:build e2e

package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RequireNoLeak fails the test when any of secrets appears in the operator's logs (every
// container of every operator Pod, current and previous), in the Events of the test's
// namespace, or in the custom resources of resources there (docs/auth.md: passwords never
// appear in status, Events or logs). It returns how many bytes it searched.
func (f *Test) RequireNoLeak(resources []schema.GroupVersionResource, secrets ...string) int {
	f.T.Helper()
	var corpus bytes.Buffer
	if err := f.operatorLogs(f.Ctx, &corpus); err != nil {
		f.T.Fatalf("reading the operator's logs: %v", err)
	}
	events, err := f.Kube.CoreV1().Events(f.Namespace).List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatalf("listing Events: %v", err)
	}
	for _, e := range events.Items {
		fmt.Fprintln(&corpus, e.Reason, e.Message)
	}
	for _, gvr := range resources {
		list, err := f.Dynamic.Resource(gvr).Namespace(f.Namespace).List(f.Ctx, metav1.ListOptions{})
		if err != nil {
			f.T.Fatalf("listing %s: %v", gvr.Resource, err)
		}
		for _, o := range list.Items {
			writeObject(&corpus, &o)
		}
	}
	text := corpus.String()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			f.T.Errorf("a secret value appears in the operator's logs, an Event or a custom resource (%d bytes searched)", corpus.Len())
		}
	}
	return corpus.Len()
}

func writeObject(w io.Writer, o *unstructured.Unstructured) {
	b, err := json.Marshal(o.Object)
	if err == nil {
		_, _ = w.Write(b)
	}
}

// operatorLogs appends the logs of every container of the operator's Pods.
func (f *Test) operatorLogs(ctx context.Context, w io.Writer) error {
	pods, err := f.Kube.CoreV1().Pods(OperatorNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			for _, previous := range []bool{false, true} {
				stream, err := f.Kube.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name, Previous: previous}).Stream(ctx)
				if err != nil {
					continue // no previous container
				}
				_, err = io.Copy(w, stream)
				_ = stream.Close()
				if err != nil {
					return err
				}
			}
		}
	}
	return nil
}
