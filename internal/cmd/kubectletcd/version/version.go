// Package version is `kubectl etcd version`: the plugin's version and the image of every
// etcd-operator Deployment the caller may list.
package version

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/printer"
)

// Report is the command's output.
type Report struct {
	Schema string `json:"schema"`
	Kind   string `json:"kind"`
	Plugin string `json:"plugin"`
	// Operators are the operator Deployments found, as namespace/name=image.
	Operators []Operator `json:"operators"`
	// OperatorError says why the operators could not be listed (no RBAC, no cluster).
	OperatorError string `json:"operatorError,omitempty"`
}

// Operator is one operator Deployment.
type Operator struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Images    []string `json:"images"`
}

// NewCmd is the cobra command.
func NewCmd(deps invocation.Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the plugin's version and the operator's image in the cluster",
		Example: `  kubectl etcd version -o json`,
		Args:    invocation.ExactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := deps()
			if err != nil {
				return err
			}
			return Run(cmd.Context(), d)
		},
	}
}

// Run prints the report.
func Run(ctx context.Context, d *invocation.Deps) error {
	r := Collect(ctx, d.Kube, d.Version)
	return printer.Print(d.Out, d.Globals.Output, r, r.Text)
}

// Collect lists the operator Deployments by their app.kubernetes.io/name label in every
// namespace; a caller without that access still gets the plugin's version.
func Collect(ctx context.Context, r client.Reader, plugin string) Report {
	rep := Report{Schema: printer.Schema, Kind: "Version", Plugin: plugin, Operators: []Operator{}}
	var list appsv1.DeploymentList
	if err := r.List(ctx, &list, client.MatchingLabels{etcdv1alpha2.LabelName: etcdv1alpha2.ManagedByOperator}); err != nil {
		rep.OperatorError = err.Error()
		return rep
	}
	for _, dep := range list.Items {
		o := Operator{Namespace: dep.Namespace, Name: dep.Name, Images: []string{}}
		for _, c := range dep.Spec.Template.Spec.Containers {
			o.Images = append(o.Images, c.Image)
		}
		rep.Operators = append(rep.Operators, o)
	}
	return rep
}

// Text renders the report for a person.
func (r Report) Text(w io.Writer) error {
	_, _ = fmt.Fprintf(w, "kubectl-etcd  %s\n", r.Plugin)
	switch {
	case r.OperatorError != "":
		_, _ = fmt.Fprintf(w, "operator      unknown (%s)\n", r.OperatorError)
	case len(r.Operators) == 0:
		_, _ = fmt.Fprintln(w, "operator      none found (no Deployment labelled app.kubernetes.io/name=etcd-operator)")
	}
	for _, o := range r.Operators {
		_, _ = fmt.Fprintf(w, "operator      %s/%s %v\n", o.Namespace, o.Name, o.Images)
	}
	return nil
}
