package invocation

import (
	"strings"

	"github.com/spf13/cobra"
)

// ExactArgs wants one positional argument per name, and otherwise is a usage error (exit 2)
// that names what is missing or extra.
func ExactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < len(names):
			return Usagef("%s needs %s; missing %s (see --help)", cmd.Name(), strings.Join(names, " "), strings.Join(names[len(args):], " "))
		case len(args) > len(names):
			return Usagef("%s takes %s; unexpected %q (see --help)", cmd.Name(), strings.Join(names, " "), strings.Join(args[len(names):], " "))
		}
		return nil
	}
}
