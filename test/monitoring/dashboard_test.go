package monitoring

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	// The operator's packages, for the metrics they register with controller-runtime's
	// registry: the operator's own (internal/metrics, through the controllers) and the
	// library's (reconcile counts and durations, work queues), exactly as the binary links them.
	_ "github.com/etcd-operator/etcd-operator/internal/operator"
)

// query is one PromQL expression of the dashboard, with where it comes from.
type query struct{ where, expr string }

func readDashboard(tb testing.TB) Dashboard {
	tb.Helper()
	d, err := ReadDashboard(repoRoot(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// labelValues matches a Grafana variable query label_values(<selector>, <label>).
var labelValues = regexp.MustCompile(`^label_values\((.*),\s*\w+\s*\)$`)

// queries returns every PromQL expression of d with the Grafana variables replaced by values
// Prometheus accepts: ranges by 5m, everything else by a name (inside a regex matcher, a
// name is a valid regex).
func queries(tb testing.TB, d Dashboard) []query {
	tb.Helper()
	var out []query
	for _, p := range d.Graphs() {
		if len(p.Targets) == 0 {
			tb.Errorf("panel %q has no query", p.Title)
		}
		for i, tg := range p.Targets {
			out = append(out, query{fmt.Sprintf("panel %q, target %d", p.Title, i), tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		s, _ := q["query"].(string)
		m := labelValues.FindStringSubmatch(s)
		if m == nil {
			tb.Errorf("variable %s: query %q, want label_values(<selector>, <label>)", v.Name, s)
			continue
		}
		out = append(out, query{"variable " + v.Name, m[1]})
	}
	for i := range out {
		out[i].expr = Substitute(out[i].expr, func(name string) string {
			if strings.Contains(name, "interval") {
				return "5m"
			}
			return "x"
		})
	}
	return out
}

// TestDashboardMetricsExist: every metric a panel or variable reads is one the operator
// registers or one of etcdMetricNames.
func TestDashboardMetricsExist(t *testing.T) {
	t.Parallel()
	d := readDashboard(t)
	if d.UID == "" {
		t.Error("the dashboard has no uid: a provisioned copy would get a new URL on each import")
	}
	qs := queries(t, d)
	if len(qs) == 0 {
		t.Fatal("no queries found")
	}
	for _, q := range qs {
		if strings.Contains(q.expr, "__name__") {
			t.Errorf("%s: selects by __name__, which this check cannot follow: %s", q.where, q.expr)
		}
		names := metricNames(q.expr)
		if len(names) == 0 {
			t.Errorf("%s: reads no metric: %s", q.where, q.expr)
		}
		for _, name := range names {
			if !operatorRegisters(t, name) && !slices.Contains(etcdMetricNames, strings.TrimSuffix(name, "_bucket")) {
				t.Errorf("%s: metric %s is neither registered by the operator nor in etcdMetricNames", q.where, name)
			}
		}
	}
}

var probeMu sync.Mutex

// operatorRegisters reports whether controller-runtime's registry, which the operator serves
// at /metrics, holds a collector of the metric name (a histogram's _bucket, _sum and _count
// series under its base name). A vector without series yet does not show in Gather, so the
// registry is asked directly: registering a probe of that name collides exactly when it does.
func operatorRegisters(tb testing.TB, name string) bool {
	tb.Helper()
	// A probe is registered for a moment: a parallel test must not see it.
	probeMu.Lock()
	defer probeMu.Unlock()
	for _, n := range []string{name, strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")} {
		probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: n, Help: "probe of test/monitoring"})
		err := ctrlmetrics.Registry.Register(probe)
		if err == nil {
			ctrlmetrics.Registry.Unregister(probe)
			continue
		}
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) || strings.Contains(err.Error(), "same fully-qualified name") {
			return true
		}
		tb.Fatalf("probing the registry for %s: %v", n, err)
	}
	return false
}

// TestDashboardQueriesParse: promtool parses every query, as recording rules of a rule file
// written for it.
func TestDashboardQueriesParse(t *testing.T) {
	t.Parallel()
	bin := requirePromtool(t)
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rules []rule
	for i, q := range queries(t, readDashboard(t)) {
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard:query_%d", i), Expr: q.expr})
	}
	data, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "dashboard-queries.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Log(promtool(t, bin, "check", "rules", "--lint=none", file))
}

// TestOperatorRegisters: the probe tells a registered metric, a histogram's series and a
// vector without series yet from a name nothing registers, and leaves the registry as it was.
func TestOperatorRegisters(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"etcd_operator_cluster_quorum_margin":                 true, // a vector, no series in this process
		"controller_runtime_reconcile_time_seconds_bucket":    true,
		"etcd_operator_reconcile_step_duration_seconds_count": true,
		"workqueue_depth":                                       true,
		"etcd_operator_no_such_metric":                          false,
		"etcd_operator_cluster_quorum_margin_bucket_of_nothing": false,
	} {
		for range 2 { // the second round finds no probe left behind by the first
			if got := operatorRegisters(t, name); got != want {
				t.Errorf("operatorRegisters(%s) = %v, want %v", name, got, want)
			}
		}
	}
}
