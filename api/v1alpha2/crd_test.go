package v1alpha2_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func readCRDs(t *testing.T) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no generated CRDs found (run `make manifests`): %v", err)
	}
	crds := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, path := range paths {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			t.Fatalf("parsing %s: %v", path, err)
		}
		crds[crd.Spec.Names.Kind] = crd
	}
	return crds
}

// messageConstants returns the literal CEL messages declared in messages.go, by name. Formats for
// messageExpression rules are left out: the CRD-validation suite checks those end to end.
func messageConstants(t *testing.T) map[string]string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), "messages.go", nil, 0)
	if err != nil {
		t.Fatalf("parsing messages.go: %v", err)
	}
	consts := map[string]string{}
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range spec.Names {
			lit, ok := spec.Values[i].(*ast.BasicLit)
			if !ok || strings.HasSuffix(name.Name, "Format") {
				continue
			}
			value, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatalf("%s: %v", name.Name, err)
			}
			consts[name.Name] = value
		}
		return false
	})
	if len(consts) == 0 {
		t.Fatal("found no message constants in messages.go")
	}
	return consts
}

// TestMarkersUseMessageConstants keeps the literal messages in the kubebuilder markers and the
// exported constants that tests and tools match on from drifting apart.
func TestMarkersUseMessageConstants(t *testing.T) {
	t.Parallel()
	inCRDs := map[string]bool{}
	for _, crd := range readCRDs(t) {
		for _, version := range crd.Spec.Versions {
			collectRuleMessages(*version.Schema.OpenAPIV3Schema, inCRDs)
		}
	}
	for name, message := range messageConstants(t) {
		if !inCRDs[message] {
			t.Errorf("%s is not the message of any CEL rule in config/crd/bases: %q", name, message)
		}
	}
}

func collectRuleMessages(schema apiextensionsv1.JSONSchemaProps, into map[string]bool) {
	for _, rule := range schema.XValidations {
		into[rule.Message] = true
	}
	for _, prop := range schema.Properties {
		collectRuleMessages(prop, into)
	}
	if schema.Items != nil && schema.Items.Schema != nil {
		collectRuleMessages(*schema.Items.Schema, into)
	}
	if schema.AdditionalProperties != nil && schema.AdditionalProperties.Schema != nil {
		collectRuleMessages(*schema.AdditionalProperties.Schema, into)
	}
}

// TestEveryFieldHasADescription is what makes `kubectl explain` teach the whole API.
func TestEveryFieldHasADescription(t *testing.T) {
	t.Parallel()
	for kind, crd := range readCRDs(t) {
		for _, version := range crd.Spec.Versions {
			root := version.Schema.OpenAPIV3Schema
			var missing []string
			for _, top := range []string{"spec", "status"} {
				prop, ok := root.Properties[top]
				if !ok {
					t.Fatalf("%s has no %s", kind, top)
				}
				missing = append(missing, undescribed(top, prop)...)
			}
			sort.Strings(missing)
			if len(missing) > 0 {
				t.Errorf("%s %s: fields without a description:\n  %s", kind, version.Name, strings.Join(missing, "\n  "))
			}
		}
	}
}

func undescribed(path string, schema apiextensionsv1.JSONSchemaProps) []string {
	var missing []string
	if strings.TrimSpace(schema.Description) == "" {
		missing = append(missing, path)
	}
	for name, prop := range schema.Properties {
		missing = append(missing, undescribed(path+"."+name, prop)...)
	}
	if schema.Items != nil && schema.Items.Schema != nil {
		for name, prop := range schema.Items.Schema.Properties {
			missing = append(missing, undescribed(path+"[]."+name, prop)...)
		}
	}
	return missing
}
