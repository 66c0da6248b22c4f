package invocation

import (
	"strings"

	"github.com/spf13/cobra"
)

// ExactArgs wants one positional argument per name, and otherwise is a usage error (exit 2)
// that names what is missing or extra. With --pod, a command that accepts it (AcceptPod) takes
// no CLUSTER, since the Pod is the target; any other command refuses --pod, naming the flag.
func ExactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if f := cmd.Flag(FlagPod); f != nil && f.Changed {
			if cmd.Annotations[AnnotationAcceptsPod] != "true" {
				return Usagef("--%s: %s does not accept it; compatibility mode covers status, members, alarm list, alarm disarm, defrag, compact and move-leader (see kubectl etcd --help)", FlagPod, cmd.CommandPath())
			}
			if len(names) > 0 && names[0] == "CLUSTER" {
				names = names[1:]
				if len(args) > len(names) {
					return Usagef("%s --%s takes no CLUSTER: the Pod is the target; unexpected %q (see --help)", cmd.Name(), FlagPod, strings.Join(args, " "))
				}
			}
		}
		switch {
		case len(args) < len(names):
			return Usagef("%s needs %s; missing %s (see --help)", cmd.Name(), strings.Join(names, " "), strings.Join(names[len(args):], " "))
		case len(args) > len(names):
			return Usagef("%s takes %s; unexpected %q (see --help)", cmd.Name(), strings.Join(names, " "), strings.Join(args[len(names):], " "))
		}
		return nil
	}
}

// Cluster is the CLUSTER argument, or "" in pod mode, where there is none.
func Cluster(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
