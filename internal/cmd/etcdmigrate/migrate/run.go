package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/adopt"
	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/phase"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/migrate/plan"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
)

// planned is one legacy cluster through the plan phase.
type planned struct {
	plan       *plan.Plan
	tr         *translate.Result
	inspection *phase.Inspection
}

// Run is etcd-migrate: a plan by default, the adoption with --apply.
func Run(ctx context.Context, o *Options, d *Deps) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if err := gate(ctx, o, d); err != nil {
		return err
	}
	op, err := phase.ReadOperator(ctx, d.Kube, o.NewController)
	if err != nil {
		return err
	}
	if !op.Found {
		_, _ = fmt.Fprintf(d.ErrOut, "warning: the operator Deployment %s was not found; template hashes assume its image is %q (set --new-controller)\n", o.NewController, op.GuardImage)
		if o.Apply {
			return fmt.Errorf("--apply needs this project's operator: Deployment %s was not found (install it, or name it with --new-controller)", o.NewController)
		}
	}
	disc, err := phase.Discover(ctx, d.Kube, d.Namespace, o.Clusters)
	if err != nil {
		return err
	}
	plans, err := planAll(ctx, o, d, disc, op)
	if err != nil {
		return err
	}
	report := plan.NewReport(plansOf(plans)...)
	if err := render(o, d, report, disc); err != nil {
		return err
	}
	if !o.Apply {
		if n := report.Refused(); n > 0 {
			return invocation.Refused("plan", fmt.Sprintf("%d cluster(s) refused; see their refusals above", n))
		}
		return nil
	}
	if err := confirm(o, d, report, disc); err != nil {
		return err
	}
	return execute(ctx, o, d, disc, plans, op)
}

// gate refuses --apply while the legacy controller runs; a dry run only warns.
func gate(ctx context.Context, o *Options, d *Deps) error {
	if o.SkipControllerCheck {
		return nil
	}
	reason, err := phase.Gate(ctx, d.Kube, o.LegacyController)
	if err != nil || reason == "" {
		return err
	}
	if o.Apply {
		return invocation.Refused("LegacyControllerRunning", reason)
	}
	_, _ = fmt.Fprintf(d.ErrOut, "warning: %s (--apply would refuse)\n", reason)
	return nil
}

func planAll(ctx context.Context, o *Options, d *Deps, disc *phase.Discovery, op phase.Operator) ([]planned, error) {
	cfg := translate.Config{ImageRepository: op.EtcdImageRepository, Version: o.Version, AuthSecret: o.AuthSecret}
	var out []planned
	for _, c := range disc.Clusters {
		_, _ = fmt.Fprintf(d.ErrOut, "inspecting %s/%s\n", c.Namespace, c.Name)
		ins, err := phase.Inspect(ctx, d.Kube, d.Dialer, c, cfg)
		if err != nil {
			return nil, err
		}
		tr := translate.Translate(ins.Input)
		k := phase.Key(c.Namespace, c.Name)
		p := plan.New(plan.Inputs{
			Translation: tr, Present: ins.Present, Backups: disc.Backups[k], Schedules: disc.Schedules[k],
			Config: plan.Config{ImageRepository: op.EtcdImageRepository, GuardImage: op.GuardImage,
				SnapshotScheduleServed: disc.SnapshotScheduleServed, SkipBackup: o.SkipBackup, BackupTarget: o.BackupTarget()},
		})
		out = append(out, planned{plan: p, tr: tr, inspection: ins})
	}
	return out, nil
}

func plansOf(ps []planned) []*plan.Plan {
	out := make([]*plan.Plan, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.plan)
	}
	return out
}

func render(o *Options, d *Deps, r *plan.Report, disc *phase.Discovery) error {
	for _, c := range disc.Resume {
		_, _ = fmt.Fprintf(d.ErrOut, "EtcdCluster %s/%s: an earlier run began its adoption; --apply completes the remaining steps\n", c.Namespace, c.Name)
	}
	if o.Output == OutputJSON {
		return r.JSON(d.Out)
	}
	return r.Text(d.Out)
}

// confirm asks before the first write, unless --yes; without a terminal there is nobody to ask.
func confirm(o *Options, d *Deps, r *plan.Report, disc *phase.Discovery) error {
	if o.Yes {
		return nil
	}
	if !d.Prompter.Interactive() {
		return invocation.Usagef("--apply without a terminal needs --yes")
	}
	ok, err := d.Prompter.Confirm(fmt.Sprintf("Adopt %d cluster(s) and finish %d begun adoption(s)?", len(r.Clusters)-r.Refused(), len(disc.Resume)))
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("not confirmed; nothing was changed")
	}
	return nil
}

func (d *Deps) poll() time.Duration {
	if d.Poll == 0 {
		return time.Second
	}
	return d.Poll
}

func (d *Deps) adopter() *adopt.Adopter {
	return &adopt.Adopter{Kube: d.Kube, Log: d.ErrOut, Poll: d.poll()}
}
