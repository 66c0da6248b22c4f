package kubectletcd_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
)

func TestEveryCommandHasAnExample(t *testing.T) {
	root := kubectletcd.NewRootCmd(os.Stdin, &bytes.Buffer{}, &bytes.Buffer{}, "test")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			if strings.TrimSpace(sub.Example) == "" {
				t.Errorf("%s has no Example", sub.CommandPath())
			}
			walk(sub)
		}
	}
	walk(root)
}

// Flag and argument mistakes are usage errors (exit 2) before anything is read or dialled.
func TestUsageErrorsOfTheEtcdCommands(t *testing.T) {
	for _, args := range [][]string{
		{"alarm", "bogus"},
		{"alarm", "list"},
		{"alarm", "disarm", "demo", "--type", "SPACE"},
		{"snapshot", "bogus"},
		{"snapshot", "save", "demo"},
		{"compact", "demo", "--revision", "x"},
		{"move-leader"},
		{"defrag", "demo", "--rule", "quota-usage=80"},
	} {
		var out, errOut bytes.Buffer
		if code := kubectletcd.Main(args, os.Stdin, &out, &errOut, "test"); code != invocation.ExitUsage {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, errOut.String())
		}
	}
}
