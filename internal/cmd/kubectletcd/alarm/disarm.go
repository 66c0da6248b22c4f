package alarm

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/mutation"
	"github.com/etcd-operator/etcd-operator/internal/defrag"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// Rules disarm checks.
const (
	// RuleCorruptNeedsForce refuses disarming CORRUPT without --force.
	RuleCorruptNeedsForce = "corrupt-needs-force"
	// RuleNoSpaceBelowQuota refuses disarming NOSPACE while a member's database is not below
	// the quota, without --force.
	RuleNoSpaceBelowQuota = "nospace-below-quota"
)

// DisarmOptions are disarm's arguments.
type DisarmOptions struct {
	Cluster string
	// Type, when set, disarms only alarms of that type.
	Type etcdclient.AlarmType
	// Member, when set, disarms only the alarms that member raised.
	Member string
	// Force disarms what the checks would refuse.
	Force bool
}

func newDisarmCmd(deps invocation.Factory) *cobra.Command {
	var o DisarmOptions
	var typ string
	cmd := &cobra.Command{
		Use:   "disarm (CLUSTER | --pod POD) [--type NOSPACE|CORRUPT] [--member M] [--force]",
		Short: "Disarm alarms once their cause is gone",
		Long: `disarm plans one AlarmDisarm call per matching alarm. NOSPACE is disarmed only when every
member's database is below the backend quota again (etcd would raise it at the next write
otherwise): free space first with compact and defrag. CORRUPT needs --force: the operator
replaces a corrupt member and then disarms the alarm itself.

With --pod (compatibility mode) only that Pod's member is asked for its database size, so
disarming NOSPACE on a cluster of several members needs --force once every member's size was
checked (kubectl etcd status --pod on each).`,
		Example: `  kubectl etcd alarm disarm demo --type NOSPACE                 # show the plan
  kubectl etcd alarm disarm demo --type NOSPACE --apply --yes
  kubectl etcd alarm disarm demo --type CORRUPT --member demo-x7k2p --force --apply
  kubectl etcd alarm disarm --pod old-0 --type NOSPACE --force --apply`,
		Args: invocation.ExactArgs("CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := ParseType(typ)
			if err != nil {
				return err
			}
			d, err := deps()
			if err != nil {
				return err
			}
			o.Cluster, o.Type = invocation.Cluster(args), t
			return RunDisarm(cmd.Context(), o, d)
		},
	}
	cmd.Flags().StringVar(&typ, "type", "", "disarm only alarms of this type: NOSPACE or CORRUPT")
	cmd.Flags().StringVar(&o.Member, "member", "", "disarm only the alarms this member (EtcdMember name) raised")
	cmd.Flags().BoolVar(&o.Force, "force", false, "disarm CORRUPT, or NOSPACE while a database is still at the quota")
	invocation.AcceptPod(cmd)
	return cmd
}

// ParseType reads --type; empty means every type.
func ParseType(s string) (etcdclient.AlarmType, error) {
	switch t := etcdclient.AlarmType(strings.ToUpper(s)); t {
	case "", etcdclient.AlarmNoSpace, etcdclient.AlarmCorrupt:
		return t, nil
	default:
		return "", invocation.Usagef("--type %q is not NOSPACE or CORRUPT", s)
	}
}

// RunDisarm plans the disarming, and applies it when asked.
func RunDisarm(ctx context.Context, o DisarmOptions, d *invocation.Deps) error {
	obs, sess, err := etcdobserve.Read(ctx, d, o.Cluster)
	if err != nil {
		return err
	}
	defer func() { _ = sess.Close() }()
	// A removed member's EtcdMember may still be there, and its alarm with it.
	known := slices.Contains(obs.Names(), o.Member) ||
		slices.ContainsFunc(obs.State.Members, func(m etcdv1alpha2.EtcdMember) bool { return m.Name == o.Member })
	if o.Member != "" && !known {
		return invocation.Usagef("--member %s is not a member of %s; its members are %s", o.Member, o.Cluster, strings.Join(obs.Names(), ", "))
	}
	p, alarms := PlanDisarm(obs, o)
	obs.Mark(p)
	return mutation.Execute(ctx, d, p, func(ctx context.Context) error {
		for _, a := range alarms {
			cctx, cancel := context.WithTimeout(ctx, d.Globals.Timeout)
			_, err := sess.AlarmDisarm(cctx, a)
			cancel()
			if err != nil {
				return fmt.Errorf("disarming %s: %w", describe(obs, a), err)
			}
			_, _ = fmt.Fprintf(d.ErrOut, "Disarmed %s.\n", describe(obs, a))
		}
		return nil
	})
}

// PlanDisarm decides which alarms to disarm, and whether the rules allow it.
func PlanDisarm(obs *etcdobserve.Observation, o DisarmOptions) (*mutation.Plan, []etcdclient.Alarm) {
	c := obs.State.Cluster
	p := mutation.New("alarm disarm", c.Namespace, c.Name)
	var picked []etcdclient.Alarm
	for _, a := range obs.Alarms {
		if (o.Type == "" || a.Type == o.Type) && (o.Member == "" || obs.NameOf(a.MemberID) == o.Member) {
			picked = append(picked, a)
			p.Step("call", "etcd AlarmDisarm", describe(obs, a))
		}
	}
	if len(picked) == 0 {
		p.Check("alarm-active", true, fmt.Sprintf("no active alarm matches (%d active)", len(obs.Alarms)))
		return p, nil
	}
	if slices.ContainsFunc(picked, func(a etcdclient.Alarm) bool { return a.Type == etcdclient.AlarmCorrupt }) {
		checkCorrupt(p, o.Force)
	}
	if slices.ContainsFunc(picked, func(a etcdclient.Alarm) bool { return a.Type == etcdclient.AlarmNoSpace }) {
		checkNoSpace(p, obs, o.Force)
	}
	return p, picked
}

func checkCorrupt(p *mutation.Plan, force bool) {
	if !force {
		p.Check(RuleCorruptNeedsForce, false, "CORRUPT means a member's data diverged; the operator replaces that member and disarms the alarm itself "+
			"(one naming no member once its keyspace hash comparison finds the voters equal; docs/design/healing.md, \"CORRUPT alarms\"). "+
			"Disarming it by hand lets writes resume while a diverged member may still serve; add --force only when that member is gone or was wrongly named")
		return
	}
	p.Check(RuleCorruptNeedsForce, true, "--force: disarming CORRUPT by hand; etcd raises it again if its corruption checks still find a mismatch")
}

// checkNoSpace mirrors the EtcdDefrag controller, which disarms NOSPACE only when every member
// answered with a database below the quota (docs/defrag.md, "Recovering from NOSPACE").
func checkNoSpace(p *mutation.Plan, obs *etcdobserve.Observation, force bool) {
	quota := obs.Quota()
	var over, unasked []string
	for _, m := range obs.Members {
		switch {
		case m.Status == nil && obs.Pod != nil && !obs.Target(m):
			unasked = append(unasked, m.Name)
		case m.Status == nil:
			over = append(over, m.Name+" (no answer)")
		case m.Status.DBSize >= quota:
			over = append(over, fmt.Sprintf("%s (%s)", m.Name, defrag.Bytes(m.Status.DBSize)))
		}
	}
	if len(over) == 0 && len(unasked) > 0 {
		checkUnasked(p, obs, unasked, quota, force)
		return
	}
	over = append(over, unasked...)
	switch {
	case len(over) == 0:
		p.Check(RuleNoSpaceBelowQuota, true, fmt.Sprintf("every member's database is below the %s quota", defrag.Bytes(quota)))
	case force:
		p.Check(RuleNoSpaceBelowQuota, true, fmt.Sprintf("--force: %s not below the %s quota; etcd raises NOSPACE again at the next write that needs space", strings.Join(over, ", "), defrag.Bytes(quota)))
	default:
		p.Check(RuleNoSpaceBelowQuota, false, fmt.Sprintf("%s not below the %s quota, so etcd would raise NOSPACE again at the next write; "+
			"free space first (delete keys, kubectl etcd compact, kubectl etcd defrag), raise spec.options.quotaBackendBytes, or add --force", strings.Join(over, ", "), defrag.Bytes(quota)))
	}
}

// checkUnasked is checkNoSpace in pod mode, where only the Pod's member is asked for its size.
func checkUnasked(p *mutation.Plan, obs *etcdobserve.Observation, unasked []string, quota int64, force bool) {
	msg := fmt.Sprintf("pod mode asks only Pod %s for its database size; %s not known to be below the %s quota", obs.Pod.Pod.Name, strings.Join(unasked, ", "), defrag.Bytes(quota))
	if force {
		p.Check(RuleNoSpaceBelowQuota, true, "--force: "+msg)
		return
	}
	p.Check(RuleNoSpaceBelowQuota, false, msg+": check each with kubectl etcd status --pod on its Pod, then add --force")
}

// describe names an alarm for plans and messages: "NOSPACE raised by demo-a (6c1f0e2b8a4d7731)".
func describe(obs *etcdobserve.Observation, a etcdclient.Alarm) string {
	id := etcdclient.FormatID(a.MemberID)
	switch name := obs.NameOf(a.MemberID); {
	case name != "":
		return fmt.Sprintf("%s raised by %s (%s)", a.Type, name, id)
	case a.MemberID == 0:
		return fmt.Sprintf("%s naming no member (ID 0)", a.Type)
	default:
		return fmt.Sprintf("%s raised by removed member %s", a.Type, id)
	}
}
