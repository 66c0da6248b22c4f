package chart

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestManagerValuesBecomeFlags checks that every manager value reaches the operator as its flag
// (docs/operator.md, "Configuration"), and that an empty one passes none, leaving the operator's
// default.
func TestManagerValuesBecomeFlags(t *testing.T) {
	t.Parallel()
	set := map[string]string{
		"etcdImage.repository=registry.local/etcd":      "--etcd-image-repository=registry.local/etcd",
		"manager.logLevel=debug":                        "--log-level=debug",
		"manager.logFormat=console":                     "--log-format=console",
		"manager.maxConcurrentReconciles=8":             "--max-concurrent-reconciles=8",
		"manager.clusterDomain=example.internal":        "--cluster-domain=example.internal",
		"manager.graces.memberFailure=4m":               "--member-failure-grace=4m",
		"manager.graces.memberStart=6m":                 "--member-start-grace=6m",
		"manager.graces.pending=7m":                     "--pending-grace=7m",
		"manager.graces.nodeLost=8m":                    "--node-lost-grace=8m",
		"manager.graces.terminating=9m":                 "--terminating-grace=9m",
		"manager.graces.orphanMember=2m":                "--orphan-member-grace=2m",
		"image.repository=registry.local/etcd-operator": "",
	}
	var values []string
	for v := range set {
		values = append(values, v)
	}
	args := managerArgs(t, mustTemplate(t, values...))
	for value, flag := range set {
		if flag != "" && !slices.Contains(args, flag) {
			t.Errorf("--set %s: the operator's args %q lack %s", value, args, flag)
		}
	}
	defaults := managerArgs(t, mustTemplate(t))
	want := []string{"--leader-elect=true", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8080"}
	if !slices.Equal(defaults, want) {
		t.Errorf("default args = %q, want only %q", defaults, want)
	}
}

// TestUnknownValueRefused checks values.schema.json: a misspelled value fails the install
// instead of being ignored.
func TestUnknownValueRefused(t *testing.T) {
	t.Parallel()
	for _, set := range []string{"manager.loglevel=debug", "replicas=2", "memberDeletionGuard.allowedGroups={admins}"} {
		if _, err := helmTemplate(t, setFlags(set)...); err == nil || !strings.Contains(err.Error(), "additional properties") {
			t.Errorf("--set %s: error = %v, want the schema's refusal of an unknown key", set, err)
		}
	}
}

// TestOptionalParts renders every optional part in the namespace-scoped mode with two namespaces.
func TestOptionalParts(t *testing.T) {
	t.Parallel()
	objs := mustTemplate(t, "manager.watchNamespaces={etcd,team-b}", "namespace.create=true",
		"metrics.serviceMonitor.enabled=true", "etcdMetrics.podMonitor.enabled=true", "networkPolicy.enabled=true",
		"memberDeletionGuard.allowedUsers={alice}", "monitoring.prometheusRule.enabled=true", "monitoring.grafanaDashboard.enabled=true")
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	for kind, n := range map[string]int{
		"Namespace": 1, "ServiceMonitor": 1, "PodMonitor": 1, "NetworkPolicy": 1, "ClusterRole": 0,
		"ClusterRoleBinding": 0, "Role": 3, "RoleBinding": 3, "CustomResourceDefinition": 6,
		"ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1, "PrometheusRule": 1, "ConfigMap": 1,
	} {
		if kinds[kind] != n {
			t.Errorf("%d objects of kind %s, want %d", kinds[kind], kind, n)
		}
	}
	sm := find(t, objs, "ServiceMonitor")
	if endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints"); len(endpoints) != 1 || endpoints[0].(map[string]any)["honorLabels"] != true {
		t.Errorf("ServiceMonitor endpoints = %v, want one with honorLabels (the per-cluster namespace label)", endpoints)
	}
	requireMonitoringCopies(t, objs)
	pm := find(t, objs, "PodMonitor")
	if got, _, _ := unstructured.NestedStringSlice(pm.Object, "spec", "namespaceSelector", "matchNames"); !slices.Equal(got, []string{"etcd", "team-b"}) {
		t.Errorf("PodMonitor namespaces = %q, want the watched ones", got)
	}
	vap := find(t, objs, "ValidatingAdmissionPolicy")
	vars, _, _ := unstructured.NestedSlice(vap.Object, "spec", "variables")
	for _, v := range vars {
		m := v.(map[string]any)
		if m["name"] == "allowedUsers" && m["expression"] != `["alice"]` {
			t.Errorf("allowedUsers expression = %v, want [\"alice\"]", m["expression"])
		}
	}
}

// TestOldKubernetesRefused checks the chart's kubeVersion: below 1.31 (README.md) the install
// fails at once rather than half-way, e.g. at the deletion guard's ValidatingAdmissionPolicy.
func TestOldKubernetesRefused(t *testing.T) {
	t.Parallel()
	if _, err := helmTemplate(t, "--kube-version", "1.30.0"); err == nil || !strings.Contains(err.Error(), "kubeVersion") {
		t.Errorf("helm template --kube-version 1.30.0: error = %v, want a refusal naming kubeVersion", err)
	}
	if _, err := helmTemplate(t, "--kube-version", "1.31.0"); err != nil {
		t.Errorf("helm template --kube-version 1.31.0: %v", err)
	}
}

func find(tb testing.TB, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	tb.Helper()
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	tb.Fatalf("no %s rendered", kind)
	return nil
}

func managerArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	d := find(t, objs, "Deployment")
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		m := c.(map[string]any)
		if m["name"] == "manager" {
			args, _, _ := unstructured.NestedStringSlice(m, "args")
			return args
		}
	}
	t.Fatal("no manager container")
	return nil
}

// requireMonitoringCopies checks that the PrometheusRule carries every alert of
// config/prometheus and the dashboard ConfigMap the dashboard of config/grafana.
func requireMonitoringCopies(tb testing.TB, objs []*unstructured.Unstructured) {
	tb.Helper()
	rule := find(tb, objs, "PrometheusRule")
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	alerts := 0
	for _, g := range groups {
		rules, _ := g.(map[string]any)["rules"].([]any)
		alerts += len(rules)
	}
	want, err := os.ReadFile(filepath.Join(repoRoot, "config", "prometheus", "alerts.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	if n := strings.Count(string(want), "- alert: "); alerts != n || n == 0 {
		tb.Errorf("the PrometheusRule holds %d rules, config/prometheus/alerts.yaml %d alerts", alerts, n)
	}
	cm := find(tb, objs, "ConfigMap")
	dashboard, err := os.ReadFile(filepath.Join(repoRoot, "config", "grafana", "etcd-operator.json"))
	if err != nil {
		tb.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "etcd-operator.json"); got != strings.TrimRight(string(dashboard), "\n") {
		tb.Errorf("the dashboard ConfigMap differs from config/grafana/etcd-operator.json (%d and %d bytes)", len(got), len(dashboard))
	}
}

// TestCRDsKeptOnUninstall checks the annotation that makes `helm uninstall` leave the chart's
// CRDs, and with them every EtcdCluster and its data (docs/helm.md, "Uninstall"): on every CRD
// of config/crd/bases by default, on none with crds.keep=false. The e2e scenario TestHelmChart installs with
// crds.enabled=false (its cluster's CRDs are shared), so this is where the annotation is checked.
func TestCRDsKeptOnUninstall(t *testing.T) {
	t.Parallel()
	bases, err := filepath.Glob(filepath.Join(repoRoot, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(bases) == 0 {
		t.Fatalf("CRDs of config/crd/bases: %v (%d found)", err, len(bases))
	}
	for _, tc := range []struct {
		set  []string
		want string
	}{{nil, "keep"}, {[]string{"crds.keep=false"}, ""}} {
		crds := 0
		for _, o := range mustTemplate(t, tc.set...) {
			if o.GetKind() != "CustomResourceDefinition" {
				continue
			}
			crds++
			if got := o.GetAnnotations()[keepAnnotation]; got != tc.want {
				t.Errorf("--set %v: CRD %s has %s=%q, want %q", tc.set, o.GetName(), keepAnnotation, got, tc.want)
			}
		}
		if crds != len(bases) {
			t.Errorf("--set %v: %d CRDs rendered, want the %d of config/crd/bases", tc.set, crds, len(bases))
		}
	}
}
