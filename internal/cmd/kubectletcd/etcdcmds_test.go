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

// --pod is accepted by the commands of compatibility mode only; every other command refuses it
// naming the flag, and an accepting command takes no CLUSTER with it (docs/kubectl-etcd.md,
// "Compatibility mode (--pod)"). All before anything is read or dialled.
func TestPodFlagUsage(t *testing.T) {
	for _, args := range [][]string{
		{"pause", "--pod", "old-0"},
		{"resume", "--pod", "old-0"},
		{"retry", "--pod", "old-0"},
		{"recover", "--pod", "old-0"},
		{"remove-member", "--pod", "old-0", "old-1"},
		{"replace-member", "--pod", "old-0", "old-1"},
		{"snapshot", "save", "--pod", "old-0", "f.db"},
		{"snapshot", "create", "--pod", "old-0"},
		{"version", "--pod", "old-0"},
	} {
		var out, errOut bytes.Buffer
		code := kubectletcd.Main(args, os.Stdin, &out, &errOut, "test")
		if code != invocation.ExitUsage || !strings.Contains(errOut.String(), "--pod: ") || !strings.Contains(errOut.String(), "does not accept it") {
			t.Errorf("%v: exit %d, want 2 naming --pod (stderr %q)", args, code, errOut.String())
		}
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"status", "demo", "--pod", "old-0"}, "takes no CLUSTER"},
		{[]string{"members", "demo", "--ca-secret", "ca"}, "add --pod NAME"},
		{[]string{"status", "demo", "--client-cert-secret", "c"}, "add --pod NAME"},
		{[]string{"defrag", "--pod", "old-0", "--apply", "--wait"}, "--wait follows the operator"},
		{[]string{"status", "--pod", "old-0", "--no-etcd"}, "--no-etcd leaves nothing"},
	} {
		var out, errOut bytes.Buffer
		if code := kubectletcd.Main(tc.args, os.Stdin, &out, &errOut, "test"); code != invocation.ExitUsage || !strings.Contains(errOut.String(), tc.says) {
			t.Errorf("%v: exit %d, want 2 saying %q (stderr %q)", tc.args, code, tc.says, errOut.String())
		}
	}
}

// Every command that accepts --pod shows it in an example.
func TestPodCommandsHaveAPodExample(t *testing.T) {
	root := kubectletcd.NewRootCmd(os.Stdin, &bytes.Buffer{}, &bytes.Buffer{}, "test")
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Annotations[invocation.AnnotationAcceptsPod] == "true" {
				n++
				if !strings.Contains(sub.Example, "--pod ") {
					t.Errorf("%s accepts --pod but no example shows it", sub.CommandPath())
				}
			}
			walk(sub)
		}
	}
	walk(root)
	if _, ok := root.GetFlagCompletionFunc(invocation.FlagPod); !ok {
		t.Error("--pod has no shell completion")
	}
	if n != 7 {
		t.Errorf("%d commands accept --pod, want 7 (status, members, alarm list, alarm disarm, defrag, compact, move-leader)", n)
	}
}
