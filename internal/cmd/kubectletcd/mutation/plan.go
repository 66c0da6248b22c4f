// Package mutation is how every mutating kubectl-etcd command acts: it computes a Plan (what it
// would patch, create or call, and why), runs the operator's own safety checks over it, prints
// it, and changes something only with --apply and a confirmation (docs/kubectl-etcd.md,
// "Dry run, confirmation and exit codes").
package mutation

import (
	"context"
	"fmt"
	"io"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/printer"
)

// Plan is what a mutating command would do.
type Plan struct {
	Schema  string `json:"schema"`
	Kind    string `json:"kind"`
	Command string `json:"command"`
	// Cluster is namespace/name: the EtcdCluster's, or in pod mode the Pod's.
	Cluster string `json:"cluster"`
	// Mode is "pod" in compatibility mode (--pod), where Note says which Pod was reached
	// (docs/kubectl-etcd.md, "Compatibility mode (--pod)").
	Mode  string `json:"mode,omitempty"`
	Note  string `json:"note,omitempty"`
	Steps []Step `json:"steps"`
	// Checks are the safety rules evaluated; a failed one refuses the whole plan.
	Checks []Check `json:"checks"`
	// Then says what the operator does once the steps are applied, for commands whose writes
	// only ask it to act (docs/lifecycle.md).
	Then []string `json:"then,omitempty"`
}

// Step is one write.
type Step struct {
	// Action is patch, create or call (an etcd RPC).
	Action string `json:"action"`
	// Target names the object or the RPC, e.g. "EtcdCluster tenant-a/etcd".
	Target string `json:"target"`
	// Change says what changes, e.g. "spec.replicas 3 → 0".
	Change string `json:"change"`
}

// Check is one safety rule and its verdict.
type Check struct {
	Rule    string `json:"rule"`
	Passed  bool   `json:"passed"`
	Message string `json:"message"`
}

// New starts a plan for command on cluster ns/name.
func New(command, ns, name string) *Plan {
	return &Plan{Schema: printer.Schema, Kind: "Plan", Command: command, Cluster: ns + "/" + name, Steps: []Step{}, Checks: []Check{}}
}

// Step adds a write.
func (p *Plan) Step(action, target, change string) {
	p.Steps = append(p.Steps, Step{Action: action, Target: target, Change: change})
}

// Check records a rule's verdict.
func (p *Plan) Check(rule string, passed bool, message string) {
	p.Checks = append(p.Checks, Check{Rule: rule, Passed: passed, Message: message})
}

// Expect records what the operator does after the steps.
func (p *Plan) Expect(what string) {
	p.Then = append(p.Then, what)
}

// Refusal is the first failed check, if any.
func (p *Plan) Refusal() (Check, bool) {
	for _, c := range p.Checks {
		if !c.Passed {
			return c, true
		}
	}
	return Check{}, false
}

// Text renders the plan for a person.
func (p *Plan) Text(w io.Writer) error {
	if p.Note != "" {
		_, _ = fmt.Fprintln(w, p.Note)
	}
	_, _ = fmt.Fprintf(w, "Plan: %s %s\n", p.Command, p.Cluster)
	for i, s := range p.Steps {
		_, _ = fmt.Fprintf(w, "  %d. %-6s %s: %s\n", i+1, s.Action, s.Target, s.Change)
	}
	if len(p.Steps) == 0 {
		_, _ = fmt.Fprintln(w, "  nothing to change")
	}
	for _, c := range p.Checks {
		verdict := "ok     "
		if !c.Passed {
			verdict = "REFUSED"
		}
		_, _ = fmt.Fprintf(w, "  check %s %s: %s\n", verdict, c.Rule, c.Message)
	}
	for _, t := range p.Then {
		_, _ = fmt.Fprintf(w, "  then   %s\n", t)
	}
	return nil
}

// Execute prints p and, when the flags and the person allow, runs apply. A failed check refuses
// (exit 3) before anything is asked; without --apply it is a dry run (exit 0); --apply asks
// [y/N] on a terminal unless --yes, and refuses without a terminal (exit 2).
func Execute(ctx context.Context, d *invocation.Deps, p *Plan, apply func(context.Context) error) error {
	if err := printer.Print(d.Out, d.Globals.Output, p, p.Text); err != nil {
		return err
	}
	if c, refused := p.Refusal(); refused {
		return invocation.Refused(c.Rule, c.Message)
	}
	if len(p.Steps) == 0 {
		return nil
	}
	if !d.Globals.Apply {
		_, _ = fmt.Fprintln(d.ErrOut, "Dry run: nothing was changed. Add --apply to carry out this plan.")
		return nil
	}
	if !d.Globals.Yes {
		if !d.Prompter.Interactive() {
			return invocation.Usagef("--apply needs a confirmation: run it on a terminal to answer [y/N], or add --yes")
		}
		ok, err := d.Prompter.Confirm(fmt.Sprintf("Carry out this plan on %s?", p.Cluster))
		if err != nil {
			return err
		}
		if !ok {
			return invocation.Usagef("not confirmed: nothing was changed")
		}
	}
	return apply(ctx)
}
