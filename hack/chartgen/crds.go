package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CRD templates are the files of config/crd/bases with three insertions: the crds.enabled
// condition around the whole, the chart's labels, and the keep annotation, which makes `helm
// uninstall` leave the CRDs and so every cluster (docs/helm.md, "Uninstall").
const (
	crdMetadata    = "\nmetadata:\n  annotations:\n"
	crdAnnotations = "    {{- if .Values.crds.keep }}\n    helm.sh/resource-policy: keep\n    {{- end }}\n"
	crdLabels      = "  labels:\n    {{- include \"etcd-operator.labels\" . | nindent 4 }}\n"
)

func writeCRDs(root string) error {
	sources, err := filepath.Glob(filepath.Join(root, crdDir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(sources) == 0 {
		return fmt.Errorf("no CRD in %s: run controller-gen first (make manifests)", crdDir)
	}
	outDir := filepath.Join(root, chartDir, "templates", "crds")
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	want := map[string]bool{}
	for _, src := range sources {
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		name := filepath.Base(src)
		out, err := crdTemplate(filepath.ToSlash(filepath.Join(crdDir, name)), data)
		if err != nil {
			return err
		}
		want[name] = true
		if err := os.WriteFile(filepath.Join(outDir, name), out, 0o644); err != nil {
			return err
		}
	}
	return removeStale(outDir, want)
}

// crdTemplate wraps one controller-gen CRD. The CRD text is copied unchanged; it must not hold
// template delimiters, which Helm would evaluate.
func crdTemplate(source string, crd []byte) ([]byte, error) {
	text := string(crd)
	if strings.Contains(text, "{{") || strings.Contains(text, "}}") {
		return nil, fmt.Errorf("%s holds a template delimiter ({{ or }}), which the chart cannot copy verbatim", source)
	}
	if strings.Count(text, crdMetadata) != 1 {
		return nil, fmt.Errorf("%s: want one %q block as controller-gen writes it", source, strings.TrimSpace(crdMetadata))
	}
	head, rest, _ := strings.Cut(text, crdMetadata)
	// The annotations come first under metadata, then the name; labels go before the name.
	annotations, tail, ok := strings.Cut(rest, "  name: ")
	if !ok {
		return nil, fmt.Errorf("%s: no metadata.name after the annotations", source)
	}
	var b bytes.Buffer
	b.WriteString(generatedBy(source))
	b.WriteString("{{- if .Values.crds.enabled }}\n")
	b.WriteString(strings.TrimPrefix(head, "---\n"))
	b.WriteString(crdMetadata)
	b.WriteString(annotations)
	b.WriteString(crdAnnotations)
	b.WriteString(crdLabels)
	b.WriteString("  name: ")
	b.WriteString(strings.TrimRight(tail, "\n"))
	b.WriteString("\n{{- end }}\n")
	return b.Bytes(), nil
}

// removeStale deletes generated files of dir that are not in want, such as the template of a
// CRD that was removed from config/crd/bases.
func removeStale(dir string, want map[string]bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() && !want[e.Name()] {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}
