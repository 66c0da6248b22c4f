package monitoring

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// Files, relative to the repository root.
const (
	prometheusRuleFile = "config/prometheus/alerts.yaml"
	alertTestsFile     = "config/prometheus/tests/alerts_test.yaml"
	monitoringDoc      = "docs/monitoring.md"
)

// alertTests is the part of a promtool test file this package reads.
type alertTests struct {
	Tests []struct {
		AlertRuleTest []struct {
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

func readYAML(tb testing.TB, rel string, into any) {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(tb), rel))
	if err != nil {
		tb.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		tb.Fatalf("%s: %v", rel, err)
	}
}

// readRules returns the groups of the plain rule file.
func readRules(tb testing.TB) RuleGroups {
	tb.Helper()
	g, err := ReadRuleGroups(repoRoot(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// TestRuleFileIsThePrometheusRule: the plain rule file holds exactly the PrometheusRule's
// groups (make manifests regenerates it; hack/verify.sh fails on a stale one too).
func TestRuleFileIsThePrometheusRule(t *testing.T) {
	t.Parallel()
	var pr struct {
		Kind string         `json:"kind"`
		Spec map[string]any `json:"spec"`
	}
	data, err := os.ReadFile(filepath.Join(repoRoot(t), prometheusRuleFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &pr); err != nil || pr.Kind != "PrometheusRule" {
		t.Fatalf("%s: kind %q, %v; want a PrometheusRule", prometheusRuleFile, pr.Kind, err)
	}
	var plain map[string]any
	data, err = os.ReadFile(filepath.Join(repoRoot(t), RulesFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &plain); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pr.Spec, plain); diff != "" {
		t.Errorf("%s differs from the spec of %s; run `make manifests` (-PrometheusRule +rule file):\n%s", RulesFile, prometheusRuleFile, diff)
	}
}

// TestEveryAlertHasARunbookAndBothCases: each alert links its runbook section in
// docs/monitoring.md, and the promtool tests check it firing and not firing.
func TestEveryAlertHasARunbookAndBothCases(t *testing.T) {
	t.Parallel()
	headings := docHeadings(t, monitoringDoc)
	var tests alertTests
	readYAML(t, alertTestsFile, &tests)
	firing, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				firing[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	var alerts []string
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts = append(alerts, r.Alert)
			anchor := strings.ToLower(r.Alert)
			if want := monitoringDoc + "#" + anchor; r.Annotations["runbook_url"] != want {
				t.Errorf("%s: runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], want)
			}
			if !headings[anchor] {
				t.Errorf("%s: %s has no section headed %q", r.Alert, monitoringDoc, r.Alert)
			}
			if !firing[r.Alert] || !quiet[r.Alert] {
				t.Errorf("%s: %s tests it firing: %v, not firing: %v; want both", r.Alert, alertTestsFile, firing[r.Alert], quiet[r.Alert])
			}
		}
	}
	for name := range firing {
		if !slices.Contains(alerts, name) {
			t.Errorf("%s tests an alert %q that no rule defines", alertTestsFile, name)
		}
	}
	if len(alerts) == 0 {
		t.Fatal("no alerts found")
	}
}

var headingLine = regexp.MustCompile(`(?m)^#{2,4} +(.+?)\s*$`)

// docHeadings returns the GitHub anchors of the headings of a Markdown file: lower case,
// spaces to '-', punctuation other than '-' and '_' dropped.
func docHeadings(tb testing.TB, rel string) map[string]bool {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(tb), rel))
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range headingLine.FindAllStringSubmatch(string(data), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}
