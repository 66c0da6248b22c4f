// Package status is `kubectl etcd status`: one screen with what the operator reports about a
// cluster (target and observed version, counts, conditions, generation and deadline, PDB) and
// what etcd answers (roles, database sizes, applied-index lag, alarms), member by member, with
// the newest snapshots (docs/kubectl-etcd.md, "status").
package status

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/printer"
)

// WatchInterval is how often --watch redraws.
const WatchInterval = 2 * time.Second

// clearScreen moves the cursor home and clears the terminal (ANSI), so that --watch redraws in
// place.
const clearScreen = "\x1b[H\x1b[2J"

// Options are the command's arguments.
type Options struct {
	Cluster string
	// Watch redraws every WatchInterval until the context ends.
	Watch bool
}

// NewCmd is the cobra command.
func NewCmd(deps invocation.Factory) *cobra.Command {
	o := Options{}
	cmd := &cobra.Command{
		Use:   "status (CLUSTER | --pod POD)",
		Short: "Show a cluster on one screen: conditions, members, PDB, alarms, snapshots",
		Long: `status shows what the operator reports about the cluster (target and running version,
replica counts, conditions, generation and progress deadline, PodDisruptionBudget) and what
etcd answers member by member (ID, role, version, database size and in use, applied-index lag),
next to each EtcdMember's Ready, Updated and Healthy conditions, its node, and the newest
snapshots. A member that does not answer shows why in its row.

--no-etcd reads only the custom resources (no port-forward, no Secret); columns only etcd knows
show "-".

--pod (compatibility mode) shows etcd's view only, through one Pod no EtcdCluster needs to
manage: that member's own Status, etcd's member list with the Pods named like the members, and
the alarms.`,
		Example: `  kubectl etcd status demo
  kubectl etcd status demo -o json
  kubectl etcd status demo --watch
  kubectl etcd status demo --no-etcd      # custom resources only, no Secret access needed
  kubectl etcd status --pod old-0         # one Pod's etcd, e.g. a legacy member before etcd-migrate`,
		Args: invocation.ExactArgs("CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := deps()
			if err != nil {
				return err
			}
			o.Cluster = invocation.Cluster(args)
			if d.Globals.PodMode() {
				return RunPod(cmd.Context(), o, d)
			}
			ctx := cmd.Context()
			if o.Watch {
				// Ctrl-C ends the watch, and the deferred closes tear the port-forwards down.
				var stop context.CancelFunc
				ctx, stop = signal.NotifyContext(ctx, os.Interrupt)
				defer stop()
			}
			return Run(ctx, o, d)
		},
	}
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "redraw every 2s until interrupted")
	invocation.AcceptPod(cmd)
	return cmd
}

// Run prints the status once, or redraws it with --watch until ctx ends.
func Run(ctx context.Context, o Options, d *invocation.Deps) error {
	r := etcdread.NewReader(d)
	defer r.Close()
	if o.Watch {
		return watch(ctx, o, d, r)
	}
	rep, err := collect(ctx, o, d, r)
	if err != nil {
		return err
	}
	if err := printer.Print(d.Out, d.Globals.Output, rep, rep.Text); err != nil {
		return err
	}
	// What the custom resources say is printed either way, but a status without etcd's half,
	// unasked for, is a failure of the command: scripts must not take it for the whole picture.
	if rep.Etcd.State == etcdread.StateUnreachable {
		return fmt.Errorf("%s; only what the custom resources say was shown (use --no-etcd to skip etcd on purpose)", strings.Join(rep.Etcd.Errors, "; "))
	}
	return nil
}

func collect(ctx context.Context, o Options, d *invocation.Deps, r *etcdread.Reader) (Report, error) {
	s, err := clusterread.Read(ctx, d.Kube, d.Namespace, o.Cluster, clusterread.Options{Pods: true, PDB: true, Snapshots: true})
	if err != nil {
		return Report{}, err
	}
	v := r.Read(ctx, s, etcdread.What{Statuses: true, Alarms: true})
	return Build(s, v, d.Clock.Now()), nil
}

// watch draws a frame every WatchInterval: in place on a terminal, otherwise one after another
// (a blank line between text frames, "---" between YAML documents). An unreachable etcd is
// shown in the frame and dialled again at the next one.
func watch(ctx context.Context, o Options, d *invocation.Deps, r *etcdread.Reader) error {
	inPlace := d.Globals.Output == invocation.OutputText && terminal(d.Out)
	for frame := 0; ; frame++ {
		rep, err := collect(ctx, o, d, r)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		// Render first, so the screen is cleared only once the new frame is ready.
		var buf bytes.Buffer
		switch {
		case inPlace:
			buf.WriteString(clearScreen)
		case frame > 0 && d.Globals.Output == invocation.OutputText:
			buf.WriteString("\n")
		case frame > 0 && d.Globals.Output == invocation.OutputYAML:
			buf.WriteString("---\n")
		}
		if err := printer.Print(&buf, d.Globals.Output, rep, rep.Text); err != nil {
			return err
		}
		if _, err := d.Out.Write(buf.Bytes()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.Clock.After(WatchInterval):
		}
	}
}

// terminal reports whether w is a terminal.
func terminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
