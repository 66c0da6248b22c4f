package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/etcd-operator/etcd-operator/hack/localcluster/cluster"
)

const usage = "usage: localcluster up|down|status|leftovers|node-stop NODE|node-start NODE|pvc-path NAMESPACE PVC"

// run dispatches one subcommand.
func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	if os.Geteuid() != 0 {
		return errors.New("run as root: the cluster creates bridges, routes, iptables rules and mounts")
	}
	wantArgs := map[string]int{"up": 0, "down": 0, "status": 0, "leftovers": 0, "node-stop": 1, "node-start": 1, "pvc-path": 2}
	sub, rest := args[0], args[1:]
	n, ok := wantArgs[sub]
	if !ok {
		return fmt.Errorf("unknown subcommand %q\n%s", sub, usage)
	}
	if len(rest) != n {
		return fmt.Errorf("%s takes %d arguments\n%s", sub, n, usage)
	}
	c, err := cluster.New(cluster.Options{})
	if err != nil {
		return err
	}
	switch sub {
	case "up":
		if err := c.Up(ctx); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "localcluster: idle memory of all cluster processes: %d MiB RSS\n", c.MemoryRSS()>>20)
		fmt.Println(c.Kubeconfig())
	case "down":
		return c.Down(ctx)
	case "status":
		return c.Status(ctx, os.Stdout)
	case "leftovers":
		left, err := c.Leftovers(ctx)
		if err != nil {
			return err
		}
		if len(left) > 0 {
			fmt.Println(strings.Join(left, "\n"))
			return fmt.Errorf("%d things of the cluster are left on this machine", len(left))
		}
	case "node-stop":
		return c.StopNode(ctx, rest[0])
	case "node-start":
		return c.StartNode(ctx, rest[0])
	case "pvc-path":
		dir, err := c.PVCHostPath(ctx, rest[0], rest[1])
		if err != nil {
			return err
		}
		fmt.Println(dir)
	}
	return nil
}
