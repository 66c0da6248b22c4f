// Package follow is --wait: after a change is applied, it re-reads the cluster until the
// operator has finished, printing one progress line to stderr whenever what it sees changes, and
// each new Event on the cluster and its members (docs/kubectl-etcd.md, "--wait").
package follow

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
)

// Interval is how often the cluster is re-read.
const Interval = 2 * time.Second

// Done looks at the cluster and says whether the operator has finished, and what it is doing.
type Done func(s *clusterread.State) (finished bool, progress string, err error)

// Until re-reads cluster name until done says finished, ctx ends (--timeout of the wait) or done
// fails.
func Until(ctx context.Context, d *invocation.Deps, name string, opts clusterread.Options, done Done) error {
	return Poll(ctx, d, func(ctx context.Context) (Observed, error) {
		s, err := clusterread.Read(ctx, d.Kube, d.Namespace, name, opts)
		if err != nil {
			return Observed{}, err
		}
		names := []string{s.Cluster.Name}
		for _, m := range s.Members {
			names = append(names, m.Name)
		}
		finished, progress, err := done(s)
		return Observed{Finished: finished, Progress: progress, EventsAbout: names}, err
	})
}

// Observed is what one look at the followed objects found.
type Observed struct {
	// Finished is true once the operator is done.
	Finished bool
	// Progress says what it is doing; a change is printed.
	Progress string
	// EventsAbout names the objects (in d.Namespace) whose new Events are printed.
	EventsAbout []string
}

// Observe looks once at whatever --wait follows.
type Observe func(ctx context.Context) (Observed, error)

// Poll calls observe every Interval until it reports Finished, fails, or ctx ends. It is Until
// for objects other than the cluster, such as an EtcdDefrag run.
func Poll(ctx context.Context, d *invocation.Deps, observe Observe) error {
	// Event times have whole seconds.
	since := d.Clock.Now().Truncate(time.Second)
	seen := map[string]bool{}
	last := ""
	for {
		o, err := observe(ctx)
		if o.EventsAbout != nil {
			printEvents(ctx, d, o.EventsAbout, since, seen)
		}
		if err != nil {
			return err
		}
		if o.Progress != last {
			_, _ = fmt.Fprintf(d.ErrOut, "%s  %s\n", d.Clock.Now().UTC().Format(time.TimeOnly), o.Progress)
			last = o.Progress
		}
		if o.Finished {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up waiting (%w); last seen: %s", ctx.Err(), last)
		case <-d.Clock.After(Interval):
		}
	}
}

// printEvents prints the Events about the named objects that are newer than since and not
// printed yet. Events are a help, not a source of truth: a failure to list them is ignored.
func printEvents(ctx context.Context, d *invocation.Deps, about []string, since time.Time, seen map[string]bool) {
	var list corev1.EventList
	if d.Kube.List(ctx, &list, client.InNamespace(d.Namespace)) != nil {
		return
	}
	var fresh []corev1.Event
	for _, e := range list.Items {
		if slices.Contains(about, e.InvolvedObject.Name) && !seen[string(e.UID)] && !lastSeen(e).Before(since) {
			fresh = append(fresh, e)
		}
	}
	slices.SortFunc(fresh, func(a, b corev1.Event) int { return lastSeen(a).Compare(lastSeen(b)) })
	for _, e := range fresh {
		seen[string(e.UID)] = true
		_, _ = fmt.Fprintf(d.ErrOut, "%s  event %s %s/%s %s: %s\n", lastSeen(e).UTC().Format(time.TimeOnly), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
	}
}

func lastSeen(e corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	default:
		return e.CreationTimestamp.Time
	}
}

// MaxWait bounds --wait: long enough for a member replacement on a slow cluster, short enough
// that a stuck change is reported instead of waited on forever.
const MaxWait = 15 * time.Minute
