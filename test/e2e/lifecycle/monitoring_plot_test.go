//go:build e2e

package lifecycle

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/common/model"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/panelplot"
)

// envUpdateDocsImages, when "1", makes the monitoring test also write its plot to
// docs/images/monitoring-heal.png, the picture docs/monitoring.md shows.
const envUpdateDocsImages = "E2E_UPDATE_DOCS_IMAGES"

// healPlotFile is the plot's file name, in the test's artifacts and in docs/images.
const healPlotFile = "monitoring-heal.png"

// plotLead is how much of the time before the first kill the plot shows.
const plotLead = 30 * time.Second

// plotQuery is one line source of a panel: a range query and how its series are named.
type plotQuery struct {
	expr string
	name func(model.Metric) string
}

func byLabel(label string) func(model.Metric) string {
	return func(m model.Metric) string { return string(m[model.LabelName(label)]) }
}

func named(name string) func(model.Metric) string {
	return func(model.Metric) string { return name }
}

// plotHeal draws the dashboard's key panels over the heal from Prometheus's range queries into
// the test's artifacts (and docs/images with E2E_UPDATE_DOCS_IMAGES=1).
func (p *scrapeRun) plotHeal(f *framework.Test, name string, killed, healed time.Time) {
	f.T.Helper()
	sel := "{" + selector(f, name) + "}"
	panels := []struct {
		title, unit string
		queries     []plotQuery
	}{
		{"Quorum margin", "voters", []plotQuery{{"etcd_operator_cluster_quorum_margin" + sel, named("margin")}}},
		{"Members", "members", []plotQuery{
			{"etcd_operator_cluster_voters" + sel, named("voters")},
			{"etcd_operator_cluster_ready_members" + sel, named("ready")},
			{"etcd_operator_cluster_learners" + sel, named("learners")},
		}},
		{"Member answers (etcd_operator_member_up)", "up", []plotQuery{{"etcd_operator_member_up" + sel, byLabel("member")}}},
		// The counter itself rather than the dashboard's increase(): each step is one action.
		{"Membership actions (etcd_operator_membership_actions_total)", "actions", []plotQuery{
			{"etcd_operator_membership_actions_total" + sel, func(m model.Metric) string {
				return string(m["type"]) + " " + string(m["outcome"])
			}},
		}},
		{"Database size", "MiB", []plotQuery{{"etcd_operator_member_db_size_bytes" + sel + " / 2^20", byLabel("member")}}},
	}
	start, end := killed.Add(-plotLead), time.Now()
	fig := panelplot.Figure{
		Title:      fmt.Sprintf("3-member cluster: one member crash-loops and is replaced (%s of Prometheus scrapes)", end.Sub(start).Round(time.Second)),
		Start:      killed,
		StartLabel: "the first kill",
		// A series without a sample for two scrapes was absent: no line through that time.
		MaxGap:  2 * p.srv.Interval,
		Markers: []panelplot.Marker{{At: killed, Label: "first kill"}, {At: healed, Label: "replaced: 3 voters"}},
	}
	for _, pn := range panels {
		panel := panelplot.Panel{Title: pn.title, Unit: pn.unit}
		for _, q := range pn.queries {
			m, err := p.srv.QueryRange(f.Ctx, q.expr, start, end, p.srv.Interval)
			if err != nil {
				f.T.Fatal(err)
			}
			panel.Series = append(panel.Series, panelplot.FromMatrix(m, q.name)...)
		}
		fig.Panels = append(fig.Panels, panel)
	}
	var buf bytes.Buffer
	if err := panelplot.WritePNG(fig, &buf); err != nil {
		f.T.Fatalf("plotting the heal: %v", err)
	}
	paths := []string{filepath.Join(f.ArtifactsDir, healPlotFile)}
	if os.Getenv(envUpdateDocsImages) == "1" {
		paths = append(paths, filepath.Join(repoRoot(f), "docs", "images", healPlotFile))
	}
	for _, path := range paths {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			f.T.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			f.T.Fatal(err)
		}
		f.T.Logf("heal plot: %s", path)
	}
}
