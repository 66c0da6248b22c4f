package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"sigs.k8s.io/yaml"
)

// Files, relative to the repository root.
const (
	// DashboardFile is the Grafana dashboard.
	DashboardFile = "config/grafana/etcd-operator.json"
	// RulesFile is the plain rule file, for Prometheus's rule_files.
	RulesFile = "config/prometheus/rules.yaml"
)

// Panel is the part of a Grafana panel the checks read; rows nest panels when collapsed.
type Panel struct {
	Title   string   `json:"title"`
	Type    string   `json:"type"`
	Panels  []Panel  `json:"panels"`
	Targets []Target `json:"targets"`
}

// Target is one query of a panel.
type Target struct {
	Expr string `json:"expr"`
}

// Dashboard is the part of the Grafana dashboard the checks read.
type Dashboard struct {
	UID        string  `json:"uid"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// ReadDashboard reads DashboardFile under the repository root.
func ReadDashboard(root string) (Dashboard, error) {
	var d Dashboard
	data, err := os.ReadFile(filepath.Join(root, DashboardFile))
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return d, fmt.Errorf("%s: %w", DashboardFile, err)
	}
	return d, nil
}

// Graphs returns every panel that is not a row, rows' nested panels included, in order.
func (d Dashboard) Graphs() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			if p.Type != "row" {
				out = append(out, p)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// grafanaVariable matches $name, ${name} and [[name]] references.
var grafanaVariable = regexp.MustCompile(`\$\{?(\w+)\}?|\[\[(\w+)\]\]`)

// Substitute replaces every Grafana variable reference in expr by value(name), as Grafana does
// before it sends a query (name without the $, such as namespace or __rate_interval).
func Substitute(expr string, value func(name string) string) string {
	return grafanaVariable.ReplaceAllStringFunc(expr, func(ref string) string {
		m := grafanaVariable.FindStringSubmatch(ref)
		name := m[1]
		if name == "" {
			name = m[2]
		}
		return value(name)
	})
}

// RuleGroups is the part of a rule file the checks read.
type RuleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Record      string            `json:"record"`
			Expr        string            `json:"expr"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// ReadRuleGroups reads RulesFile under the repository root.
func ReadRuleGroups(root string) (RuleGroups, error) {
	var g RuleGroups
	data, err := os.ReadFile(filepath.Join(root, RulesFile))
	if err != nil {
		return g, err
	}
	if err := yaml.Unmarshal(data, &g); err != nil {
		return g, fmt.Errorf("%s: %w", RulesFile, err)
	}
	return g, nil
}
