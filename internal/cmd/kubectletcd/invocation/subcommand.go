package invocation

import "github.com/spf13/cobra"

// Parent makes cmd a command that only groups subcommands: alone it prints its help, and an
// argument that names no subcommand is a usage error (exit 2), where cobra would print the help
// and exit 0.
func Parent(cmd *cobra.Command) *cobra.Command {
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return Usagef("unknown command %q for %q (see --help)", args[0], c.CommandPath())
		}
		return nil
	}
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	return cmd
}
