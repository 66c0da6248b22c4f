// Command promrules writes the plain Prometheus rule file (`groups:` at the top, what promtool
// and a Prometheus without prometheus-operator read) from the PrometheusRule that is the one
// source of the alerts, so the two never drift (docs/monitoring.md, "Alerts"). Comments, key
// order and block scalars are kept.
//
//	go run ./hack/promrules config/prometheus/alerts.yaml config/prometheus/rules.yaml
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

func main() {
	if len(os.Args) != 3 {
		_, _ = fmt.Fprintln(os.Stderr, "usage: promrules config/prometheus/alerts.yaml config/prometheus/rules.yaml")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		_, _ = fmt.Fprintln(os.Stderr, "hack/promrules:", err)
		os.Exit(1)
	}
}

func run(src, dst string) error {
	in, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	out, err := render(in, src)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	return os.WriteFile(dst, out, 0o644)
}

// header says where the file comes from; the name of the source is filled in.
const header = `# Generated from %s by hack/promrules (make manifests).
# Do not edit: edit the PrometheusRule and regenerate. The same groups as a plain Prometheus
# rule file, for promtool (tests/alerts_test.yaml) and a Prometheus that reads rule_files.
`

// render returns the plain rule file of a PrometheusRule: its spec.groups under `groups:`.
func render(prometheusRule []byte, source string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(prometheusRule, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, errors.New("want one YAML document")
	}
	root := doc.Content[0]
	if kind := valueOf(root, "kind"); kind == nil || kind.Value != "PrometheusRule" {
		return nil, errors.New("want kind: PrometheusRule")
	}
	spec := valueOf(root, "spec")
	groups := valueOf(spec, "groups")
	if groups == nil || groups.Kind != yaml.SequenceNode {
		return nil, errors.New("want spec.groups, a list")
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: "groups"}, groups,
	}}
	var b bytes.Buffer
	_, _ = fmt.Fprintf(&b, header, source) // writes to a buffer never fail
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// valueOf returns the value of key in mapping m; nil when m is not a mapping or lacks key.
func valueOf(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
