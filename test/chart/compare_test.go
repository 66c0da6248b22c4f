package chart

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// helmLabels are the labels Helm's conventions add to every object; config/ sets only
// app.kubernetes.io/name, and on some objects none. They are ignored on the objects themselves.
var helmLabels = []string{
	"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
	"app.kubernetes.io/version", "app.kubernetes.io/name",
}

// helmPodLabels are those the chart adds to the Deployment's selector and Pod template; the name
// label is compared there, since both installs select on it.
var helmPodLabels = []string{
	"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version",
}

// difference is an object that one install has and the other does not, with the reason.
type difference map[string]string

// Intended differences between the chart's default install and config/default.
var (
	onlyInChart = difference{
		"Service etcd-operator-system/etcd-operator-metrics": "the chart's metrics Service, for the optional " +
			"ServiceMonitor (docs/helm.md); config/default has no Prometheus wiring",
	}
	onlyInConfig = difference{
		"Namespace /etcd-operator-system": "Helm installs into a namespace that exists or that " +
			"`--create-namespace` makes; namespace.create=true renders it (docs/helm.md)",
	}
	// keepAnnotation is on the chart's CRDs only: it is what makes `helm uninstall` leave them;
	// kubectl has no uninstall to guard against.
	keepAnnotation = "helm.sh/resource-policy"
)

// TestDefaultInstallMatchesConfigDefault is the acceptance check of issue #20: the chart with its
// default values and `kustomize build config/default` give the same objects with the same
// specs, apart from Helm's labels and the differences listed above.
func TestDefaultInstallMatchesConfigDefault(t *testing.T) {
	t.Parallel()
	compareInstalls(t, mustTemplate(t), kustomizeBuild(t, "config/default"), onlyInChart, onlyInConfig)
}

// TestNamespacedInstallMatchesConfigNamespaced checks the namespace-scoped mode against
// config/namespaced, which watches the one namespace "etcd" and installs neither CRDs nor the
// deletion guard (a cluster administrator does).
func TestNamespacedInstallMatchesConfigNamespaced(t *testing.T) {
	t.Parallel()
	chart := mustTemplate(t, "manager.watchNamespaces={etcd}", "crds.enabled=false", "memberDeletionGuard.enabled=false")
	compareInstalls(t, chart, kustomizeBuild(t, "config/namespaced"), onlyInChart, onlyInConfig)
}

func compareInstalls(t *testing.T, chart, config []*unstructured.Unstructured, onlyChart, onlyConfig difference) {
	t.Helper()
	got, want := index(t, chart), index(t, config)
	for _, key := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[key]; !ok {
			if _, intended := onlyChart[key]; !intended {
				t.Errorf("only the chart renders %s", key)
			}
			continue
		}
		if diff := cmp.Diff(want[key], got[key]); diff != "" {
			t.Errorf("%s differs between config/ and the chart (-config +chart):\n%s", key, diff)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(want)) {
		if _, ok := got[key]; !ok {
			if _, intended := onlyConfig[key]; !intended {
				t.Errorf("the chart does not render %s, which config/ has", key)
			}
		}
	}
	for key, why := range onlyChart {
		if _, ok := want[key]; ok {
			t.Errorf("%s is listed as chart-only (%s) but config/ has it too: drop it from the list", key, why)
		}
	}
}

// clusterScoped are the cluster-scoped kinds of both installs. kustomize's `namespace:` also
// sets a namespace on the ValidatingAdmissionPolicy and its binding, which it does not know to be
// cluster-scoped; kubectl drops it on apply, so it is no difference.
var clusterScoped = []string{
	"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Namespace",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
}

// index normalizes each object and keys it by kind, namespace and name.
func index(t *testing.T, objs []*unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, o := range objs {
		if slices.Contains(clusterScoped, o.GetKind()) {
			o.SetNamespace("")
		}
		key := o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
		if _, dup := out[key]; dup {
			t.Fatalf("%s is rendered twice", key)
		}
		normalize(o)
		out[key] = o.Object
	}
	return out
}

func normalize(o *unstructured.Unstructured) {
	o.SetLabels(without(o.GetLabels(), helmLabels))
	if o.GetKind() == "CustomResourceDefinition" {
		a := o.GetAnnotations()
		delete(a, keepAnnotation)
		o.SetAnnotations(a)
	}
	if o.GetKind() == "ValidatingAdmissionPolicy" {
		normalizeCEL(o)
	}
	for _, path := range [][]string{{"spec", "selector", "matchLabels"}, {"spec", "template", "metadata", "labels"}} {
		if m, ok, _ := unstructured.NestedStringMap(o.Object, path...); ok {
			_ = unstructured.SetNestedStringMap(o.Object, without(m, helmPodLabels), path...)
		}
	}
}

// without returns m less keys, or nil when nothing is left, as an object without labels has.
func without(m map[string]string, keys []string) map[string]string {
	for _, k := range keys {
		delete(m, k)
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// normalizeCEL collapses the white space of the policy's CEL expressions. kustomize reads the
// folded multi-line systemDeleters expression of config/admission with one more line break than
// Helm's YAML library does; white space between CEL tokens means nothing.
func normalizeCEL(o *unstructured.Unstructured) {
	for _, field := range []string{"variables", "validations"} {
		items, _, _ := unstructured.NestedSlice(o.Object, "spec", field)
		for _, item := range items {
			if m, ok := item.(map[string]any); ok {
				if e, ok := m["expression"].(string); ok {
					m["expression"] = strings.Join(strings.Fields(e), " ")
				}
			}
		}
		if items != nil {
			_ = unstructured.SetNestedSlice(o.Object, items, "spec", field)
		}
	}
}
