// Package moveleader is `kubectl etcd move-leader`: it hands raft leadership to another voter,
// gated by the operator's own quorum check (docs/design/quorum.md: MoveLeader needs quorum and a
// healthy target), for instance before draining the leader's node.
package moveleader

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/mutation"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// Rules this command checks.
const (
	// RuleLeaderKnown refuses when no member names a leader: there is no leadership to move.
	RuleLeaderKnown = "leader-known"
	// RuleTargetAvailable refuses when no follower qualifies as the default target.
	RuleTargetAvailable = "target-available"
	// RuleQuorum is the operator's quorum gate; its refusals name the gate's reason.
	RuleQuorum = "quorum"
	// RuleAlreadyLeader notes that the target leads already.
	RuleAlreadyLeader = "already-leader"
	// RuleTargetUpdated notes a target that a roll will restart.
	RuleTargetUpdated = "target-updated"
	// RulePodIsLeader refuses pod mode through a Pod that does not lead: etcd accepts
	// MoveLeader only from the leader, and pod mode reaches that one Pod.
	RulePodIsLeader = "pod-is-leader"
)

// Options are the command's arguments.
type Options struct {
	Cluster string
	// To names the member to lead; empty picks one.
	To string
}

// NewCmd is the cobra command.
func NewCmd(deps invocation.Factory) *cobra.Command {
	var o Options
	cmd := &cobra.Command{
		Use:   "move-leader (CLUSTER | --pod POD --to MEMBER) [--to MEMBER]",
		Short: "Hand raft leadership to another voter",
		Long: `move-leader asks the leader to transfer leadership. Without --to, the target is the healthy,
Updated follower with the highest applied index: the one that needs the least catching up and
that no roll will restart soon. The operator's quorum gate must allow the move: the cluster
needs quorum and the target must be a healthy voter.

With --pod (compatibility mode) the Pod must run the leader, since etcd takes MoveLeader only from
the leader, and --to is required: one Pod cannot rank the followers. The target counts as healthy
when its Pod (named like the member) is Ready.`,
		Example: `  kubectl etcd move-leader demo                          # show the plan and its target
  kubectl etcd move-leader demo --to demo-7vx2m --apply --yes
  kubectl etcd move-leader --pod old-0 --to old-1             # old-0 leads; a Pod no EtcdCluster manages`,
		Args: invocation.ExactArgs("CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := deps()
			if err != nil {
				return err
			}
			o.Cluster = invocation.Cluster(args)
			return Run(cmd.Context(), o, d)
		},
	}
	cmd.Flags().StringVar(&o.To, "to", "", "member (EtcdMember name; with --pod, etcd's name) to lead; default: the healthy, updated follower with the highest applied index")
	invocation.AcceptPod(cmd)
	return cmd
}

// Run plans the move, and applies it when asked.
func Run(ctx context.Context, o Options, d *invocation.Deps) error {
	if d.Globals.PodMode() && o.To == "" {
		return invocation.Usagef("move-leader --pod needs --to MEMBER: one Pod cannot see the followers' applied indexes to pick a target")
	}
	obs, sess, err := etcdobserve.Read(ctx, d, o.Cluster)
	if err != nil {
		return err
	}
	defer func() { _ = sess.Close() }()
	if _, ok := obs.Member(o.To); o.To != "" && !ok {
		return invocation.Usagef("--to %s is not a member etcd lists; the members of %s are %s", o.To, o.Cluster, strings.Join(obs.Names(), ", "))
	}
	p, target := Plan(obs, o.To)
	obs.Mark(p)
	return mutation.Execute(ctx, d, p, func(ctx context.Context) error {
		cctx, cancel := context.WithTimeout(ctx, d.Globals.Timeout)
		defer cancel()
		if err := sess.MoveLeader(cctx, target.ID); err != nil {
			return fmt.Errorf("moving the leadership of %s to %s: %w", p.Cluster, target.Name, err)
		}
		_, _ = fmt.Fprintf(d.ErrOut, "%s now leads %s.\n", target.Name, p.Cluster)
		return nil
	})
}

// Plan decides where leadership goes, and whether the quorum gate allows it.
func Plan(obs *etcdobserve.Observation, to string) (*mutation.Plan, *etcdobserve.Member) {
	c := obs.State.Cluster
	p := mutation.New("move-leader", c.Namespace, c.Name)
	leader := obs.Leader()
	if leader == nil {
		p.Check(RuleLeaderKnown, false, "no member that answered names a leader: without quorum there is no leadership to move (kubectl etcd status shows which members answer)")
		return p, nil
	}
	if obs.Pod != nil && !obs.Target(*leader) {
		p.Check(RulePodIsLeader, false, fmt.Sprintf("etcd takes MoveLeader only from the leader, and pod mode reaches Pod %s alone, which does not lead; %s does: run it with --pod on %s's Pod",
			obs.Pod.Pod.Name, leader.Name, leader.Name))
		return p, nil
	}
	target, why := pick(obs, leader, to)
	if target == nil {
		p.Check(RuleTargetAvailable, false, "no follower can take over: "+why)
		return p, nil
	}
	if target.ID == leader.ID {
		p.Check(RuleAlreadyLeader, true, target.Name+" already leads the cluster")
		return p, nil
	}
	d := quorum.Check(obs.QuorumView(), quorum.MoveLeader(target.Name))
	if !d.Allowed {
		p.Check(RuleQuorum, false, d.Err().Error())
		return p, nil
	}
	p.Check(RuleQuorum, true, d.Message)
	if obs.Pod == nil && !etcdobserve.Updated(*target) {
		p.Check(RuleTargetUpdated, true, target.Name+" is not Updated: a roll will restart it, which moves leadership again")
	}
	change := fmt.Sprintf("leadership %s (%s) → %s (%s)", leader.Name, etcdclient.FormatID(leader.ID), target.Name, etcdclient.FormatID(target.ID))
	if target.Status != nil {
		// Pod mode asks only the leader for its Status.
		change += fmt.Sprintf(", applied index %d", target.Status.RaftAppliedIndex)
		if leader.Status != nil {
			change += fmt.Sprintf(" of the leader's %d", leader.Status.RaftAppliedIndex)
		}
	}
	p.Step("call", "etcd MoveLeader", change)
	return p, target
}

// pick is the member named to, else the healthy, Updated follower with the highest applied index
// (ties by name); when none qualifies, why says what each follower lacks.
func pick(obs *etcdobserve.Observation, leader *etcdobserve.Member, to string) (*etcdobserve.Member, string) {
	if to != "" {
		m, _ := obs.Member(to)
		return m, ""
	}
	var best *etcdobserve.Member
	var why []string
	for i := range obs.Members {
		m := &obs.Members[i]
		if m.ID == leader.ID {
			continue
		}
		if lacks := disqualified(obs, *m); lacks != "" {
			why = append(why, m.Name+" "+lacks)
			continue
		}
		if best == nil || cmp.Compare(m.Status.RaftAppliedIndex, best.Status.RaftAppliedIndex) > 0 {
			best = m
		}
	}
	if best == nil && len(why) == 0 {
		why = append(why, leader.Name+" is the only member")
	}
	slices.Sort(why)
	return best, strings.Join(why, "; ")
}

// disqualified says why m cannot be the default target; empty when it can.
func disqualified(obs *etcdobserve.Observation, m etcdobserve.Member) string {
	switch unhealthy := obs.Unhealthy(m); {
	case m.Learner:
		return "is a learner"
	case unhealthy != "":
		return unhealthy
	case !etcdobserve.Updated(m):
		return "is not Updated (a roll will restart it)"
	default:
		return ""
	}
}
