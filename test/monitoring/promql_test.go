package monitoring

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMetricNames(t *testing.T) {
	t.Parallel()
	for expr, want := range map[string][]string{
		`up`: {"up"},
		`sum by (namespace, cluster) (rate(a_total{job="x",le=~"0.5|1"}[5m]))`:              {"a_total"},
		`histogram_quantile(0.99, sum by (le) (rate(b_bucket[$__rate_interval])))`:          {"b_bucket"},
		`x == 0 and on (namespace, cluster) y >= 3`:                                         {"x", "y"},
		`time() - ts{cluster=~"$cluster"} > 25 * 3600`:                                      {"ts"},
		`a / ignoring(reason) group_left(team) b offset 1h`:                                 {"a", "b"},
		`max_over_time(m[1h:5m]) > 1e3 or vector(0)`:                                        {"m"},
		`label_replace(n, "dst", "$1", "src", "(.*)")`:                                      {"n"},
		`count(rate(c[5m])) without (pod)`:                                                  {"c"},
		`topk(3, sum by (x) (d)) unless e`:                                                  {"d", "e"},
		`{__name__="f"}`:                                                                    nil,
		`rate(g{label="with } brace"}[5m])`:                                                 {"g"},
		`sum without (instance) (h) / count by (job) (nosuchfunction_name (i))`:             {"h", "i"},
		`increase(etcd_operator_cluster_leader_changes_total{namespace=~"$namespace"}[1h])`: {"etcd_operator_cluster_leader_changes_total"},
	} {
		if diff := cmp.Diff(want, metricNames(expr)); diff != "" {
			t.Errorf("metricNames(%s) mismatch (-want +got):\n%s", expr, diff)
		}
	}
}
