package migrate

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/adopt"
	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/phase"
	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/verify"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/migrate/plan"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
)

// Outcome is one cluster's result of an applied run.
type Outcome struct {
	Cluster string
	// Result is refused, excluded, failed, adopted or verified.
	Result string
	Detail string
	Backup *phase.BackupResult
}

// Results of a cluster.
const (
	ResultRefused  = "refused"
	ResultExcluded = "excluded"
	ResultFailed   = "failed"
	ResultAdopted  = "adopted"
	ResultVerified = "verified"
)

// execute runs disable-auth, backup, adopt and verify for each adoptable cluster, then
// finishes the adoptions earlier runs began. One cluster's failure never stops the others.
func execute(ctx context.Context, o *Options, d *Deps, disc *phase.Discovery, plans []planned, op phase.Operator) error {
	var outs []Outcome
	for _, p := range plans {
		if p.plan.Verdict == plan.VerdictRefused {
			outs = append(outs, Outcome{Cluster: p.plan.Cluster, Result: ResultRefused, Detail: "left untouched"})
			continue
		}
		outs = append(outs, adoptOne(ctx, o, d, disc, p, op))
	}
	for _, c := range disc.Resume {
		outs = append(outs, finishOne(ctx, d, disc, c))
	}
	Summary(d.Out, outs, plans)
	var failed []string
	for _, out := range outs {
		if out.Result == ResultFailed || out.Result == ResultExcluded {
			failed = append(failed, out.Cluster)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d cluster(s) not adopted or not verified: %s", len(failed), strings.Join(failed, ", "))
	}
	// A refused cluster is still the legacy operator's: the run did not migrate the namespace,
	// and scripts must see that (docs/migration.md, "Exit codes").
	if n := countResult(outs, ResultRefused); n > 0 {
		return invocation.Refused("plan", fmt.Sprintf("%d cluster(s) refused and left untouched; the others were adopted", n))
	}
	return nil
}

func countResult(outs []Outcome, result string) int {
	n := 0
	for _, out := range outs {
		if out.Result == result {
			n++
		}
	}
	return n
}

func adoptOne(ctx context.Context, o *Options, d *Deps, disc *phase.Discovery, p planned, op phase.Operator) Outcome {
	c := p.inspection.Input.Cluster
	out := Outcome{Cluster: p.plan.Cluster}
	_, _ = fmt.Fprintf(d.ErrOut, "adopting %s\n", out.Cluster)
	if p.tr.Security.AuthWindow {
		if _, err := phase.DisableAuth(ctx, d.Kube, d.Dialer, c, p.inspection.Input.Pods); err != nil {
			out.Result, out.Detail = ResultExcluded, "turning auth off failed: "+err.Error()
			return out
		}
	}
	if !o.SkipBackup {
		image := o.AgentImage
		if image == "" {
			image = op.Image
		}
		res, err := phase.Backup(ctx, d.Kube, d.Clock, c, phase.BackupConfig{Image: image, Destination: o.Destination(), Timeout: o.BackupTimeout, Poll: d.Poll})
		if err != nil {
			out.Result, out.Detail = ResultExcluded, string(translate.RefusalBackupFailed)+": "+err.Error()
			return out
		}
		out.Backup = res
		_, _ = fmt.Fprintf(d.ErrOut, "  backed up to %s (%s, revision %d)\n", res.URI, res.Checksum, res.Revision)
	}
	k := phase.Key(c.Namespace, c.Name)
	err := d.adopter().Adopt(ctx, adopt.Target{
		Plan: p.plan, Translation: p.tr, Restarts: p.inspection.Restarts,
		Backups: disc.Backups[k], Schedules: disc.Schedules[k], SnapshotScheduleServed: disc.SnapshotScheduleServed,
	})
	if err != nil {
		out.Result, out.Detail = ResultFailed, err.Error()+" (re-run to complete the adoption)"
		return out
	}
	return verifyOne(ctx, d, c.Namespace, c.Name, out)
}

func finishOne(ctx context.Context, d *Deps, disc *phase.Discovery, c *etcdv1alpha2.EtcdCluster) Outcome {
	out := Outcome{Cluster: phase.Key(c.Namespace, c.Name)}
	_, _ = fmt.Fprintf(d.ErrOut, "finishing the adoption of %s\n", out.Cluster)
	k := out.Cluster
	if err := d.adopter().Finish(ctx, c, disc.Backups[k], disc.Schedules[k], disc.SnapshotScheduleServed); err != nil {
		out.Result, out.Detail = ResultFailed, err.Error()+" (re-run to complete the adoption)"
		return out
	}
	return verifyOne(ctx, d, c.Namespace, c.Name, out)
}

// verifyOne waits for the operator to report Available=True, then verifies.
func verifyOne(ctx context.Context, d *Deps, ns, name string, out Outcome) Outcome {
	timeout := d.VerifyTimeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	c := &etcdv1alpha2.EtcdCluster{}
	_ = wait.PollUntilContextTimeout(ctx, d.poll(), timeout, true, func(ctx context.Context) (bool, error) {
		if err := d.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return false, nil //nolint:nilerr // a read error is retried until the timeout
		}
		return meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1alpha2.ConditionAvailable), nil
	})
	res, err := verify.Cluster(ctx, d.Kube, d.Dialer, c)
	switch {
	case err != nil:
		out.Result, out.Detail = ResultAdopted, "verify failed: "+err.Error()
	case !res.Passed():
		out.Result, out.Detail = ResultAdopted, "verify: "+strings.Join(res.Problems, "; ")+" (run etcd-migrate verify later)"
	default:
		out.Result = ResultVerified
	}
	return out
}

// Summary writes the per-cluster results and the follow-ups.
func Summary(w io.Writer, outs []Outcome, plans []planned) {
	_, _ = fmt.Fprintln(w, "Summary:")
	for _, o := range outs {
		line := fmt.Sprintf("  %-40s %s", o.Cluster, o.Result)
		if o.Detail != "" {
			line += ": " + o.Detail
		}
		_, _ = fmt.Fprintln(w, line)
		if o.Backup != nil {
			_, _ = fmt.Fprintf(w, "  %-40s backup %s %s\n", "", o.Backup.URI, o.Backup.Checksum)
		}
	}
	for _, p := range plans {
		s := p.plan.Security
		if p.plan.Verdict == plan.VerdictRefused {
			continue
		}
		if s.PeerAutoTLS {
			_, _ = fmt.Fprintf(w, "  ⚠ %s keeps peer auto-TLS (encrypted, unauthenticated peers)\n", p.plan.Cluster)
		}
		for _, m := range s.CAMerges {
			_, _ = fmt.Fprintf(w, "  ⚠ %s CA merge: %s\n", p.plan.Cluster, m)
		}
		if s.AuthWindow {
			_, _ = fmt.Fprintf(w, "  ⚠ %s auth is off until the operator turns it on again\n", p.plan.Cluster)
		}
	}
	_, _ = fmt.Fprintln(w, "Follow-ups: re-issue certificates with wildcard SANs for the operator's Services; remove the legacy CRDs once nothing uses them (docs/migration.md, \"Runbook\").")
}
