//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/monitoring"
)

// What the monitoring test (monitoring_test.go) asks Prometheus.

const (
	// seriesTimeout bounds the wait for a series to show a state: the operator sets the
	// per-cluster gauges once per pass, every 30 s at rest (docs/monitoring.md, "Metrics"), and
	// Prometheus scrapes every second.
	seriesTimeout = 2 * time.Minute
	// dbSizeTolerance is how far the scraped database sizes may be from etcd's Status: the
	// operator's value is from its last pass, and etcd grows its file between them.
	dbSizeTolerance = 0.1
	// dashboardRateInterval stands for Grafana's $__rate_interval: at least four scrapes.
	dashboardRateInterval = "1m"
	// dashboardStep is the resolution of the dashboard's range queries.
	dashboardStep = 5 * time.Second
	// steadyFor is how long the series must show a healthy cluster before the fault and after
	// the heal, so that the plot shows both states, not only the transitions (a bootstrap that
	// just ended looks like a fault).
	steadyFor = 30 * time.Second
)

// ruleSet is the plain rule file Prometheus evaluates, and its alerts' expressions by name.
type ruleSet struct {
	path   string
	alerts map[string]string
}

func readRuleSet(f *framework.Test) ruleSet {
	f.T.Helper()
	root := repoRoot(f)
	g, err := monitoring.ReadRuleGroups(root)
	if err != nil {
		f.T.Fatal(err)
	}
	rs := ruleSet{path: filepath.Join(root, monitoring.RulesFile), alerts: map[string]string{}}
	for _, grp := range g.Groups {
		for _, r := range grp.Rules {
			if r.Alert != "" {
				rs.alerts[r.Alert] = r.Expr
			}
		}
	}
	for _, want := range []string{"EtcdMemberDown", "EtcdClusterQuorumAtRisk"} {
		if rs.alerts[want] == "" {
			f.T.Fatalf("%s has no alert %s", monitoring.RulesFile, want)
		}
	}
	return rs
}

// repoRoot is the repository root: this package is three levels below it.
func repoRoot(f *framework.Test) string {
	f.T.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		f.T.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		f.T.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

// selector is the label matchers of the cluster's series.
func selector(f *framework.Test, name string) string {
	return fmt.Sprintf(`namespace=%q,cluster=%q`, f.Namespace, name)
}

// waitQuery polls expr until ok accepts its answer; ok also says what it saw, for the failure.
func (p *scrapeRun) waitQuery(f *framework.Test, what, expr string, ok func(model.Vector) (bool, string)) {
	f.T.Helper()
	err := f.Poll(what, seriesTimeout, func(ctx context.Context) (bool, string, error) {
		v, err := p.srv.Query(ctx, expr, time.Now())
		if err != nil {
			return false, err.Error(), nil
		}
		done, seen := ok(v)
		return done, expr + " → " + seen, nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
}

// waitNear waits until expr yields one sample within tolerance (a fraction) of want.
func (p *scrapeRun) waitNear(f *framework.Test, expr string, want, tolerance float64) {
	f.T.Helper()
	p.waitQuery(f, fmt.Sprintf("%s = %g", expr, want), expr, func(v model.Vector) (bool, string) {
		if len(v) != 1 {
			return false, fmt.Sprintf("%d samples", len(v))
		}
		got := float64(v[0].Value)
		return math.Abs(got-want) <= tolerance*math.Abs(want), fmt.Sprintf("%g", got)
	})
}

// requireTargetsUp waits until Prometheus scrapes the operator and the 3 members of the cluster.
func (p *scrapeRun) requireTargetsUp(f *framework.Test, name string) {
	f.T.Helper()
	// Every replica is scraped, as the ServiceMonitor would; only the leader has per-cluster series.
	p.waitQuery(f, "the operator scraped", fmt.Sprintf(`up{job=%q} == 1`, operatorJob), func(v model.Vector) (bool, string) {
		return len(v) > 0, fmt.Sprintf("%d replicas up", len(v))
	})
	p.waitNear(f, fmt.Sprintf(`count(up{job=%q,%s} == 1)`, membersJob, selector(f, name)), 3, 0)
}

// requireClusterState checks the per-cluster series against etcd and the Pods.
func (p *scrapeRun) requireClusterState(f *framework.Test, name string) {
	f.T.Helper()
	sel := selector(f, name)
	ml, err := memberList(f.Ctx, f, name)
	if err != nil {
		f.T.Fatal(err)
	}
	voters, learners, _ := countMembers(ml)
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: voterSelector(name)})
	if err != nil {
		f.T.Fatal(err)
	}
	ready := 0
	for i := range pods.Items {
		if framework.PodReady(&pods.Items[i]) {
			ready++
		}
	}
	for metric, want := range map[string]int{
		"etcd_operator_cluster_desired_members": 3,
		"etcd_operator_cluster_voters":          voters,
		"etcd_operator_cluster_learners":        learners,
		"etcd_operator_cluster_ready_members":   ready,
		"etcd_operator_cluster_quorum_margin":   ready - (voters/2 + 1),
		"etcd_operator_cluster_has_leader":      1,
	} {
		p.waitNear(f, metric+"{"+sel+"}", float64(want), 0)
	}
	f.T.Logf("operator's series = etcd and Pods: %d voters, %d learners, %d Ready, margin %d", voters, learners, ready, ready-(voters/2+1))
	p.requireLeaderAndSizes(f, name)
}

// requireLeaderAndSizes checks etcd's own is_leader against the leader etcd's Status names,
// and each member's database size (the operator's and etcd's own series) against its Status.
func (p *scrapeRun) requireLeaderAndSizes(f *framework.Test, name string) {
	f.T.Helper()
	sel := selector(f, name)
	members, err := listMembers(f.Ctx, f, name)
	if err != nil {
		f.T.Fatal(err)
	}
	byID := map[string]string{}
	for _, m := range members {
		byID[m.Status.MemberID] = m.Name
	}
	leader := byID[leaderID(f, name)]
	if leader == "" {
		f.T.Fatalf("etcd's leader %s is none of the members %v", leaderID(f, name), byID)
	}
	p.waitNear(f, fmt.Sprintf(`etcd_server_is_leader{%s,pod=%q}`, sel, leader), 1, 0)
	p.waitNear(f, fmt.Sprintf(`sum(etcd_server_is_leader{%s})`, sel), 1, 0)
	c, eps := dialVoters(f, name)
	for _, ep := range eps {
		ctx, cancel := context.WithTimeout(f.Ctx, etcdCallTimeout)
		st, err := c.Status(ctx, ep)
		cancel()
		if err != nil {
			f.T.Fatalf("etcd Status at %s: %v", ep, err)
		}
		member := byID[hexID(st.Header.MemberId)]
		p.waitNear(f, fmt.Sprintf(`etcd_operator_member_db_size_bytes{%s,member=%q}`, sel, member), float64(st.DbSize), dbSizeTolerance)
		p.waitNear(f, fmt.Sprintf(`etcd_mvcc_db_total_size_in_bytes{%s,pod=%q}`, sel, member), float64(st.DbSize), dbSizeTolerance)
		f.T.Logf("member %s: database %d bytes in etcd's Status, the same in both series (±%g)", member, st.DbSize, dbSizeTolerance)
	}
	f.T.Logf("leader %s: is_leader 1 on its Pod only, has_leader 1", leader)
}

// seriesOf returns the series of m whose labels include every pair of want.
func seriesOf(m model.Matrix, want map[string]string) []*model.SampleStream {
	var out []*model.SampleStream
	for _, s := range m {
		match := true
		for k, v := range want {
			match = match && string(s.Metric[model.LabelName(k)]) == v
		}
		if match && len(s.Values) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// requireFaultSeen checks, over the fault (first kill → replaced), that the quorum margin was 0
// at some point, that the EtcdMemberDown expression returned the killed member and
// EtcdClusterQuorumAtRisk's the cluster, and that Prometheus's own EtcdMemberDown went pending.
func (p *scrapeRun) requireFaultSeen(f *framework.Test, name, victim string, killed, healed time.Time) {
	f.T.Helper()
	rangeOf := func(expr string) model.Matrix {
		m, err := p.srv.QueryRange(f.Ctx, expr, killed, healed, p.srv.Interval)
		if err != nil {
			f.T.Fatal(err)
		}
		return m
	}
	cluster := map[string]string{"namespace": f.Namespace, "cluster": name}
	margin := seriesOf(rangeOf("etcd_operator_cluster_quorum_margin{"+selector(f, name)+"}"), cluster)
	lowest := math.Inf(1)
	for _, s := range margin {
		for _, v := range s.Values {
			lowest = math.Min(lowest, float64(v.Value))
		}
	}
	if lowest != 0 {
		f.T.Errorf("quorum margin during the fault: lowest %g, want 0 (one of 3 voters down)", lowest)
	}
	down := seriesOf(rangeOf(p.rules.alerts["EtcdMemberDown"]), map[string]string{"namespace": f.Namespace, "cluster": name, "member": victim})
	if len(down) == 0 {
		f.T.Errorf("EtcdMemberDown's expression never returned %s during the fault", victim)
	} else {
		first := down[0].Values[0].Timestamp.Time()
		f.Record("member-down-visible", first.Sub(killed).Round(time.Millisecond), "first kill → EtcdMemberDown's expression returns the member (1 s scrapes and evaluations)")
	}
	if len(seriesOf(rangeOf(p.rules.alerts["EtcdClusterQuorumAtRisk"]), cluster)) == 0 {
		f.T.Errorf("EtcdClusterQuorumAtRisk's expression never returned %s during the fault", name)
	}
	pending := rangeOf(fmt.Sprintf(`ALERTS{alertname="EtcdMemberDown",alertstate="pending",%s,member=%q}`, selector(f, name), victim))
	if len(seriesOf(pending, cluster)) == 0 {
		f.T.Errorf("Prometheus's EtcdMemberDown never went pending for %s", victim)
	}
}

// requireRecovered waits until the series say the cluster healed: margin 1, 3 Ready, and
// neither fault expression returns anything for the cluster.
func (p *scrapeRun) requireRecovered(f *framework.Test, name string) {
	f.T.Helper()
	sel := selector(f, name)
	p.waitNear(f, "etcd_operator_cluster_quorum_margin{"+sel+"}", 1, 0)
	p.waitNear(f, "etcd_operator_cluster_ready_members{"+sel+"}", 3, 0)
	for _, alert := range []string{"EtcdMemberDown", "EtcdClusterQuorumAtRisk"} {
		expr := p.rules.alerts[alert]
		p.waitQuery(f, alert+"'s expression empty for the cluster", expr, func(v model.Vector) (bool, string) {
			var mine []string
			for _, s := range v {
				if string(s.Metric["namespace"]) == f.Namespace && string(s.Metric["cluster"]) == name {
					mine = append(mine, s.Metric.String())
				}
			}
			return len(mine) == 0, strings.Join(mine, ", ")
		})
	}
}

// requireRulesEvaluate checks that Prometheus loaded every alert of the rule file and that each
// evaluated without error, and that each expression also answers as a query.
func (p *scrapeRun) requireRulesEvaluate(f *framework.Test) {
	f.T.Helper()
	err := f.Poll("every rule evaluated", seriesTimeout, func(ctx context.Context) (bool, string, error) {
		groups, err := p.srv.Rules(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		var pending []string
		seen := map[string]bool{}
		for _, g := range groups {
			for _, r := range g.Rules {
				seen[r.Name] = true
				if r.Health != "ok" || r.LastError != "" || r.LastEvaluation.IsZero() {
					pending = append(pending, fmt.Sprintf("%s (health %q, error %q)", r.Name, r.Health, r.LastError))
				}
			}
		}
		for alert := range p.rules.alerts {
			if !seen[alert] {
				pending = append(pending, alert+" (not loaded)")
			}
		}
		slices.Sort(pending)
		return len(pending) == 0, strings.Join(pending, "; "), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	for alert, expr := range p.rules.alerts {
		if _, err := p.srv.Query(f.Ctx, expr, time.Now()); err != nil {
			f.T.Errorf("alert %s: %v", alert, err)
		}
	}
	f.T.Logf("%d alerts loaded and evaluated without error", len(p.rules.alerts))
}

// requireDashboardData runs every panel's queries over the test, with the dashboard's variables
// set to this cluster, and requires data from at least one query of each panel.
func (p *scrapeRun) requireDashboardData(f *framework.Test, name string, since time.Time) {
	f.T.Helper()
	d, err := monitoring.ReadDashboard(repoRoot(f))
	if err != nil {
		f.T.Fatal(err)
	}
	vars := map[string]string{"namespace": regexp.QuoteMeta(f.Namespace), "cluster": regexp.QuoteMeta(name),
		"__rate_interval": dashboardRateInterval}
	panels, empty := 0, []string{}
	for _, panel := range d.Graphs() {
		panels++
		withData := 0
		for i, tg := range panel.Targets {
			expr := monitoring.Substitute(tg.Expr, func(v string) string {
				if vars[v] == "" {
					f.T.Errorf("panel %q: unknown variable $%s", panel.Title, v)
				}
				return vars[v]
			})
			m, err := p.srv.QueryRange(f.Ctx, expr, since, time.Now(), dashboardStep)
			switch {
			case err != nil:
				f.T.Errorf("panel %q, query %d: %v", panel.Title, i, err)
			case len(m) == 0:
				empty = append(empty, fmt.Sprintf("%q query %d", panel.Title, i))
			default:
				withData++
			}
		}
		if withData == 0 {
			f.T.Errorf("panel %q: no query returned data", panel.Title)
		}
	}
	f.T.Logf("%d panels, each with data; queries without data (another query of the panel had some): %v", panels, empty)
}

// requireSeriesGone waits until the operator exports no series naming the deleted cluster
// (docs/monitoring.md, "Metrics": the controller drops them), so that nothing alerts on it.
func (p *scrapeRun) requireSeriesGone(f *framework.Test, name string) {
	f.T.Helper()
	expr := fmt.Sprintf(`{job=%q,%s}`, operatorJob, selector(f, name))
	p.waitQuery(f, "no operator series of the deleted cluster", expr, func(v model.Vector) (bool, string) {
		var names []string
		for _, s := range v {
			names = append(names, string(s.Metric[model.MetricNameLabel]))
		}
		slices.Sort(names)
		return len(v) == 0, strings.Join(slices.Compact(names), ", ")
	})
}

// waitSteady waits until the quorum margin has been 1 in every scrape of the last steadyFor.
func (p *scrapeRun) waitSteady(f *framework.Test, name string) {
	f.T.Helper()
	margin := fmt.Sprintf("etcd_operator_cluster_quorum_margin{%s}[%ds]", selector(f, name), int(steadyFor.Seconds()))
	scrapes := int(steadyFor/p.srv.Interval) * 4 / 5
	expr := fmt.Sprintf("min_over_time(%s) == 1 and count_over_time(%s) >= %d", margin, margin, scrapes)
	p.waitQuery(f, fmt.Sprintf("quorum margin 1 for %s", steadyFor), expr, func(v model.Vector) (bool, string) {
		return len(v) == 1, fmt.Sprintf("%d series", len(v))
	})
}
