package invocation

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// Output formats of -o.
const (
	OutputText = "text"
	OutputJSON = "json"
	OutputYAML = "yaml"
)

// Globals are the flags every command accepts (docs/kubectl-etcd.md, "Global flags").
type Globals struct {
	// Kube holds the standard kubectl flags: --kubeconfig, --context, -n, --as, ...
	Kube *genericclioptions.ConfigFlags
	// Output is text, json or yaml.
	Output string
	// Timeout bounds each etcd call; commands with long calls (defrag, snapshot save) use
	// their own, longer bound.
	Timeout time.Duration
	// Apply executes a mutating command; without it the command prints its plan.
	Apply bool
	// Wait follows an applied change until the operator finishes it.
	Wait bool
	// Yes skips the interactive confirmation.
	Yes bool
	// CredentialsSecret overrides the basic-auth Secret, as [namespace/]name.
	CredentialsSecret string
	// NoEtcd makes read commands show only what the custom resources say.
	NoEtcd bool
	// Pod selects compatibility mode: the commands that accept it reach the etcd of this one Pod
	// (in the namespace), with the connection derived from the Pod itself, and read no
	// EtcdCluster (docs/kubectl-etcd.md, "Compatibility mode (--pod)").
	Pod string
	// CASecret, in pod mode, is a Secret [namespace/]name whose ca.crt verifies the Pod's server
	// certificate, for when the Secret mounted for --cert-file holds no ca.crt.
	CASecret string
	// ClientCertSecret, in pod mode, is a kubernetes.io/tls Secret [namespace/]name whose
	// tls.crt and tls.key are presented to an etcd started with --client-cert-auth.
	ClientCertSecret string
}

// FlagPod is the name of the compatibility-mode flag.
const FlagPod = "pod"

// AnnotationAcceptsPod marks a command that accepts --pod; every other command refuses it.
const AnnotationAcceptsPod = "kubectl-etcd/accepts-pod"

// AcceptPod marks cmds as accepting --pod.
func AcceptPod(cmds ...*cobra.Command) {
	for _, c := range cmds {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[AnnotationAcceptsPod] = "true"
	}
}

// PodMode reports whether --pod was given.
func (g *Globals) PodMode() bool { return g.Pod != "" }

// NewGlobals returns the defaults.
func NewGlobals() *Globals {
	return &Globals{
		Kube:    genericclioptions.NewConfigFlags(true),
		Output:  OutputText,
		Timeout: 30 * time.Second,
	}
}

// Bind registers the global flags on fs.
func (g *Globals) Bind(fs *pflag.FlagSet) {
	g.Kube.AddFlags(fs)
	fs.StringVarP(&g.Output, "output", "o", g.Output, "output format: text, json or yaml")
	fs.DurationVar(&g.Timeout, "timeout", g.Timeout, "bound on each etcd call")
	fs.BoolVar(&g.Apply, "apply", false, "execute a mutating command (without it, print the plan and change nothing)")
	fs.BoolVar(&g.Wait, "wait", false, "after --apply, follow the operator until it finishes (progress on stderr)")
	fs.BoolVarP(&g.Yes, "yes", "y", false, "skip the [y/N] confirmation of --apply")
	fs.StringVar(&g.CredentialsSecret, "credentials-secret", "", "basic-auth Secret [namespace/]name to authenticate to etcd with, instead of the cluster's root credentials")
	fs.BoolVar(&g.NoEtcd, "no-etcd", false, "read commands: show only what the custom resources say, never dial etcd")
	fs.StringVar(&g.Pod, FlagPod, "", "compatibility mode: reach the etcd of this one Pod, without an EtcdCluster, TLS derived from its etcd flags "+
		"(status, members, alarm, defrag, compact and move-leader only; e.g. kubectl etcd members --pod old-0)")
	fs.StringVar(&g.CASecret, "ca-secret", "", "with --pod: Secret [namespace/]name whose ca.crt verifies the Pod's server certificate, when its own Secret has no ca.crt")
	fs.StringVar(&g.ClientCertSecret, "client-cert-secret", "", "with --pod: kubernetes.io/tls Secret [namespace/]name with the client certificate an etcd with --client-cert-auth wants")
}

// Validate checks the flags' values.
func (g *Globals) Validate() error {
	switch g.Output {
	case OutputText, OutputJSON, OutputYAML:
	default:
		return Usagef("--output %q is not one of text, json, yaml", g.Output)
	}
	if g.Timeout <= 0 {
		return Usagef("--timeout must be positive, got %s", g.Timeout)
	}
	if g.Wait && !g.Apply {
		return Usagef("--wait follows an applied change: add --apply")
	}
	if !g.PodMode() && (g.CASecret != "" || g.ClientCertSecret != "") {
		return Usagef("--ca-secret and --client-cert-secret configure the connection of --pod: add --pod NAME, or drop them (a cluster by name takes its TLS from its spec)")
	}
	if g.PodMode() && g.NoEtcd {
		return Usagef("--pod reaches etcd only, so --no-etcd leaves nothing to show")
	}
	if g.PodMode() && g.Wait {
		return Usagef("--wait follows the operator, which --pod bypasses: pod-mode calls finish before the command returns")
	}
	return nil
}

// Namespace is the namespace the command works in: -n, else the kubeconfig context's.
func (g *Globals) Namespace() (string, error) {
	ns, _, err := g.Kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	return ns, nil
}
