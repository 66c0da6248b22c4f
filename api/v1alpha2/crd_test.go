package v1alpha2_test

import (
	"fmt"
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

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/version"
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

// oldestVersionRule is rule 26 of docs/api.md written for oldest: the version is at least oldest,
// compared component by component as numbers. A malformed version is left to the pattern.
func oldestVersionRule(oldest version.Version) string {
	major, minor, patch := "int(self.split('.')[0])", "int(self.split('.')[1])", "int(self.split('.')[2])"
	return fmt.Sprintf("!self.matches('^[0-9]+[.][0-9]+[.][0-9]+$') || %s > %d || (%s == %d && (%s > %d || (%s == %d && %s >= %d)))",
		major, oldest.Major, major, oldest.Major, minor, oldest.Minor, minor, oldest.Minor, patch, oldest.Patch)
}

// TestVersionRuleMatchesOldest keeps the CEL floor of spec.version, its message and the field's
// description equal to version.Oldest, the oldest version the controller runs: a CRD that
// accepted an older version would let the controller refuse it after admission, and one that
// refused a supported version would lock users out of it.
func TestVersionRuleMatchesOldest(t *testing.T) {
	t.Parallel()
	crd := readCRDs(t)["EtcdCluster"]
	if crd == nil {
		t.Fatal("no EtcdCluster CRD")
	}
	oldest := version.Oldest.String()
	if !strings.Contains(etcdv1alpha2.MsgVersionTooOld, oldest+" or later") {
		t.Errorf("MsgVersionTooOld does not name %s, the oldest version the operator runs: %q", oldest, etcdv1alpha2.MsgVersionTooOld)
	}
	for _, v := range crd.Spec.Versions {
		field := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["version"]
		if !strings.Contains(field.Description, "At least "+oldest+",") {
			t.Errorf("%s: spec.version's description does not name %s as the oldest version: %q", v.Name, oldest, field.Description)
		}
		var rules []string
		for _, rule := range field.XValidations {
			if rule.Message == etcdv1alpha2.MsgVersionTooOld {
				rules = append(rules, rule.Rule)
			}
		}
		if want := oldestVersionRule(version.Oldest); len(rules) != 1 || rules[0] != want {
			t.Errorf("%s: spec.version's floor rule is %q;\nwant exactly one, for version.Oldest %s:\n%q", v.Name, rules, oldest, want)
		}
	}
}
