//go:build e2e

package framework

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodUIDs maps the Pods matching selector in the test namespace, by name, to their UIDs: a test
// compares two such maps to tell "the same object" from "recreated under the same name". It
// fails the test when the Pods cannot be listed.
func (f *Test) PodUIDs(selector string) map[string]types.UID {
	f.T.Helper()
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		f.T.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		out[p.Name] = p.UID
	}
	return out
}

// PVCUIDs is PodUIDs for the PersistentVolumeClaims matching selector.
func (f *Test) PVCUIDs(selector string) map[string]types.UID {
	f.T.Helper()
	pvcs, err := f.Kube.CoreV1().PersistentVolumeClaims(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		f.T.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range pvcs.Items {
		out[p.Name] = p.UID
	}
	return out
}
