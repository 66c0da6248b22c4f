package main

import (
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

func TestCRDTemplate(t *testing.T) {
	t.Parallel()
	crd := "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  annotations:\n" +
		"    controller-gen.kubebuilder.io/version: v0.20.1\n  name: things.example.io\nspec:\n  group: example.io\n"
	got, err := crdTemplate("bases/things.yaml", []byte(crd))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"{{- if .Values.crds.enabled }}\napiVersion:",
		"v0.20.1\n    {{- if .Values.crds.keep }}\n    helm.sh/resource-policy: keep\n    {{- end }}\n  labels:\n",
		"  name: things.example.io\nspec:\n  group: example.io\n{{- end }}\n",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("template lacks %q:\n%s", want, got)
		}
	}
	if _, err := crdTemplate("x", []byte(strings.Replace(crd, "example.io\n", "{{ .X }}\n", 1))); err == nil {
		t.Error("a CRD holding {{ was accepted: Helm would evaluate it")
	}
	if _, err := crdTemplate("x", []byte(strings.Replace(crd, "  annotations:\n", "", 1))); err == nil {
		t.Error("a CRD of an unknown shape was accepted")
	}
}

func TestCollectValues(t *testing.T) {
	t.Parallel()
	src := "# About the file.\n\ngroup:\n  # The first value.\n  # Two lines.\n  first: 1\n  # A map as one value.\n  obj:\n    a: b\n# Last.\nlast: \"\"\n"
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	var values []value
	schema, err := collect(doc.Content[0], "", &values)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range values {
		got = append(got, v.path+": "+v.description)
	}
	want := "group.first: The first value. Two lines.|group.obj: A map as one value.|last: Last."
	if strings.Join(got, "|") != want {
		t.Errorf("values = %q, want %q", strings.Join(got, "|"), want)
	}
	if schema["additionalProperties"] != false {
		t.Errorf("schema %v does not refuse unknown keys", schema)
	}
	bad := "group:\n  undocumented: 1\n"
	if err := yaml.Unmarshal([]byte(bad), &doc); err != nil {
		t.Fatal(err)
	}
	if _, err := collect(doc.Content[0], "", &values); err == nil || !strings.Contains(err.Error(), "group.undocumented") {
		t.Errorf("an undocumented value: error = %v, want one naming it", err)
	}
}
