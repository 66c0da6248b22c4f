// Package printer renders a command's data model as text, JSON or YAML. The data model never
// knows how it is printed, and every JSON document carries the versioned schema name, so that
// scripts can tell which shape they read (docs/kubectl-etcd.md, "Machine-readable output").
package printer

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
)

// Schema is the apiVersion-like name of every JSON and YAML document kubectl-etcd prints.
const Schema = "kubectl-etcd/v1"

// Print writes v in format; text renders the text form.
func Print(w io.Writer, format string, v any, text func(io.Writer) error) error {
	switch format {
	case invocation.OutputJSON:
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case invocation.OutputYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	default:
		return text(w)
	}
}
