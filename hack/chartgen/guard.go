package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// The deletion guard of config/admission, with the chart's names: what the kustomize install
// hard-codes (the policy's name, the operator's ServiceAccount, the empty break-glass list)
// comes from the release and values.
const (
	guardTemplate = "deletion-guard.yaml"
	// guardName is the policy's and the binding's name in config/admission; in the chart the
	// prefix is the release's full name.
	guardName   = "etcd-operator-etcdmember-deletion-guard"
	guardSuffix = "-etcdmember-deletion-guard"

	// Placeholders written into the YAML and replaced by template text after marshalling.
	phName      = "CHARTGEN_NAME"
	phOperators = "CHARTGEN_OPERATORS"
	phUsers     = "CHARTGEN_USERS"
	phLabels    = "CHARTGEN_LABELS"
)

// guardTemplateText is what each placeholder becomes. The operator identity keeps the CEL
// single quotes of config/admission, so a default install renders the same expression.
var guardTemplateText = map[string]string{
	phName:      `{{ include "etcd-operator.fullname" . }}` + guardSuffix,
	phOperators: `"['system:serviceaccount:{{ .Release.Namespace }}:{{ include "etcd-operator.serviceAccountName" . }}']"`,
	phUsers:     `{{ .Values.memberDeletionGuard.allowedUsers | toJson | toJson }}`,
}

// The labels of config/admission give way to the chart's.
const (
	labelsPlaceholder = "  labels:\n    " + phLabels + ": \"\"\n"
	labelsTemplate    = "  labels:\n    {{- include \"etcd-operator.labels\" . | nindent 4 }}\n"
)

func writeGuard(root string) error {
	data, err := os.ReadFile(filepath.Join(root, guardFile))
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString(generatedBy(guardFile))
	b.WriteString("{{- if .Values.memberDeletionGuard.enabled }}\n")
	docs := strings.Split(string(data), "\n---\n")
	if len(docs) != 2 {
		return fmt.Errorf("%s: want a policy and a binding, got %d documents", guardFile, len(docs))
	}
	for i, doc := range docs {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return fmt.Errorf("%s: %w", guardFile, err)
		}
		if err := templateGuardObject(obj); err != nil {
			return fmt.Errorf("%s: %w", guardFile, err)
		}
		text, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		out := strings.Replace(string(text), labelsPlaceholder, labelsTemplate, 1)
		for ph, tmpl := range guardTemplateText {
			out = strings.ReplaceAll(out, " "+ph+"\n", " "+tmpl+"\n")
		}
		if strings.Contains(out, "CHARTGEN_") {
			return fmt.Errorf("%s: a placeholder was left in the template", guardFile)
		}
		b.WriteString(out)
	}
	b.WriteString("{{- end }}\n")
	return os.WriteFile(filepath.Join(root, chartDir, "templates", guardTemplate), b.Bytes(), 0o644)
}

// templateGuardObject puts placeholders where the chart's values go, and fails when
// config/admission no longer has the shape this generator knows.
func templateGuardObject(obj map[string]any) error {
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil || meta["name"] != guardName {
		return fmt.Errorf("want metadata.name %s", guardName)
	}
	meta["name"] = phName
	meta["labels"] = map[string]any{phLabels: ""}
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return fmt.Errorf("%s has no spec", obj["kind"])
	}
	switch obj["kind"] {
	case "ValidatingAdmissionPolicyBinding":
		if spec["policyName"] != guardName {
			return fmt.Errorf("the binding's policyName is not %s", guardName)
		}
		spec["policyName"] = phName
		return nil
	case "ValidatingAdmissionPolicy":
		return templateGuardVariables(spec)
	default:
		return fmt.Errorf("unexpected kind %v", obj["kind"])
	}
}

// templateGuardVariables replaces the expressions of the policy's operatorServiceAccounts and
// allowedUsers variables.
func templateGuardVariables(spec map[string]any) error {
	vars, _ := spec["variables"].([]any)
	want := map[string]string{"operatorServiceAccounts": phOperators, "allowedUsers": phUsers}
	for _, v := range vars {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		if ph, ok := want[name]; ok {
			m["expression"] = ph
			delete(want, name)
		}
	}
	if len(want) > 0 {
		return fmt.Errorf("the policy lacks the variables %v", want)
	}
	return nil
}
