// Package alarm is `kubectl etcd alarm list` and `kubectl etcd alarm disarm`: etcd's active
// alarms named by member, and their disarming. NOSPACE makes etcd refuse writes until the space
// is freed and the alarm disarmed (docs/defrag.md, "Recovering from NOSPACE"); CORRUPT is the
// operator's to heal, by replacing the member (docs/design/healing.md, "CORRUPT alarms").
package alarm

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/printer"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// NewCmd is the parent command of list and disarm.
func NewCmd(deps invocation.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alarm",
		Short: "List or disarm etcd's alarms (NOSPACE, CORRUPT)",
		Long: `etcd raises NOSPACE when a member's database reaches the backend quota, and then refuses
writes; it raises CORRUPT when a member's data diverged. list names the members; disarm clears
alarms once their cause is gone. Both accept --pod (compatibility mode).`,
		Example: `  kubectl etcd alarm list demo
  kubectl etcd alarm disarm demo --type NOSPACE --apply
  kubectl etcd alarm list --pod old-0`,
	}
	invocation.Parent(cmd)
	cmd.AddCommand(newListCmd(deps), newDisarmCmd(deps))
	return cmd
}

// ListOptions are list's arguments.
type ListOptions struct {
	Cluster string
}

func newListCmd(deps invocation.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list (CLUSTER | --pod POD)",
		Short: "List the active alarms and the members that raised them",
		Example: `  kubectl etcd alarm list demo
  kubectl etcd alarm list demo -o json
  kubectl etcd alarm list --pod old-0                 # a Pod no EtcdCluster manages`,
		Args: invocation.ExactArgs("CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := deps()
			if err != nil {
				return err
			}
			return RunList(cmd.Context(), ListOptions{Cluster: invocation.Cluster(args)}, d)
		},
	}
	invocation.AcceptPod(cmd)
	return cmd
}

// List is list's output.
type List struct {
	Schema  string `json:"schema"`
	Kind    string `json:"kind"`
	Cluster string `json:"cluster"`
	// Mode is "pod" in compatibility mode, where Note says which Pod was reached.
	Mode   string  `json:"mode,omitempty"`
	Note   string  `json:"note,omitempty"`
	Alarms []Alarm `json:"alarms"`
}

// Alarm is one active alarm.
type Alarm struct {
	Type string `json:"type"`
	// MemberID is etcd's hex ID of the member that raised it; "0" names no member.
	MemberID string `json:"memberID"`
	// Member is the member's EtcdMember name (in pod mode its etcd name); empty when no
	// member has the ID.
	Member string `json:"member,omitempty"`
}

// RunList prints the alarms.
func RunList(ctx context.Context, o ListOptions, d *invocation.Deps) error {
	if d.Globals.NoEtcd {
		return invocation.Usagef("alarms live in etcd only, so --no-etcd leaves nothing to list (the EtcdCluster's Degraded condition reports them as AlarmActive)")
	}
	obs, sess, err := etcdobserve.Read(ctx, d, o.Cluster)
	if err != nil {
		return err
	}
	defer func() { _ = sess.Close() }()
	l := Collect(obs)
	return printer.Print(d.Out, d.Globals.Output, l, l.Text)
}

// Collect names each alarm's member.
func Collect(obs *etcdobserve.Observation) List {
	c := obs.State.Cluster
	l := List{Schema: printer.Schema, Kind: "Alarms", Cluster: c.Namespace + "/" + c.Name, Alarms: []Alarm{}}
	if obs.Pod != nil {
		l.Mode, l.Note = etcdobserve.Mode, obs.Pod.Heading()
	}
	for _, a := range obs.Alarms {
		l.Alarms = append(l.Alarms, Alarm{Type: string(a.Type), MemberID: etcdclient.FormatID(a.MemberID), Member: obs.NameOf(a.MemberID)})
	}
	return l
}

// Text renders the list for a person.
func (l List) Text(w io.Writer) error {
	if l.Note != "" {
		_, _ = fmt.Fprintln(w, l.Note)
	}
	if len(l.Alarms) == 0 {
		_, _ = fmt.Fprintf(w, "No active alarm on %s.\n", l.Cluster)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "TYPE\tMEMBER\tID")
	for _, a := range l.Alarms {
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\n", a.Type, memberLabel(a), a.MemberID)
	}
	return tw.Flush()
}

// memberLabel says who raised a, also when nobody can be named.
func memberLabel(a Alarm) string {
	switch {
	case a.Member != "":
		return a.Member
	case a.MemberID == "0":
		return "(no member: a hash mismatch without a majority)"
	default:
		return "(a member etcd no longer lists)"
	}
}
