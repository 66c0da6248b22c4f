package adopt

import (
	"context"
	"fmt"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/migrate/plan"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
)

// Adopter executes adoptions against the API server.
type Adopter struct {
	Kube client.Client
	// Log receives one line per write (progress, stderr).
	Log io.Writer
	// Poll is the interval of the waits; StatefulSetGone and ServiceGone bound them (2 min and
	// 1 min when zero, docs/migration.md "Adoption steps").
	Poll                         time.Duration
	StatefulSetGone, ServiceGone time.Duration
}

// Target is one cluster to adopt from its plan.
type Target struct {
	Plan        *plan.Plan
	Translation *translate.Result
	// Restarts are the Pods' restart counts at inspection, recorded on the members.
	Restarts map[string]int32
	// Backups and Schedules are the cluster's legacy backup objects.
	Backups   []legacy.EtcdBackup
	Schedules []legacy.EtcdBackupSchedule
	// SnapshotScheduleServed says EtcdSnapshotSchedule is served.
	SnapshotScheduleServed bool
}

// Adopt runs the nine steps for a planned cluster.
func (a *Adopter) Adopt(ctx context.Context, t Target) error {
	if t.Plan == nil || t.Plan.Objects == nil {
		return fmt.Errorf("no adoption plan for %s", t.Plan.Cluster)
	}
	c, err := a.createCluster(ctx, t)
	if err != nil {
		return fmt.Errorf("step 1: %w", err)
	}
	if err := a.createMembers(ctx, c, t); err != nil {
		return fmt.Errorf("step 2: %w", err)
	}
	return a.Finish(ctx, c, t.Backups, t.Schedules, t.SnapshotScheduleServed)
}

// Finish runs steps 3–9 from what steps 1 and 2 created: the EtcdCluster and its members hold
// every name the rest needs, so an adoption whose legacy EtcdCluster is gone already (step 4)
// is completed from them.
func (a *Adopter) Finish(ctx context.Context, c *etcdv1alpha2.EtcdCluster, backups []legacy.EtcdBackup, schedules []legacy.EtcdBackupSchedule, scheduleServed bool) error {
	members, err := a.members(ctx, c)
	if err != nil {
		return err
	}
	steps := []func() error{
		func() error { return a.headlessOwners(ctx, members) },
		func() error { return a.releaseLegacy(ctx, c) },
		func() error { return a.deleteLegacyState(ctx, c) },
		func() error { return a.reown(ctx, c, members) },
		func() error { return a.cutOver(ctx, c) },
		func() error { return a.handOver(ctx, c, members) },
		func() error { return a.carryBackups(ctx, c, backups, schedules, scheduleServed) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("step %d: %w", i+3, err)
		}
	}
	return nil
}

// members are the adopted EtcdMembers of c, from step 2.
func (a *Adopter) members(ctx context.Context, c *etcdv1alpha2.EtcdCluster) ([]etcdv1alpha2.EtcdMember, error) {
	var list etcdv1alpha2.EtcdMemberList
	if err := a.Kube.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingLabels{etcdv1alpha2.LabelCluster: c.Name}); err != nil {
		return nil, fmt.Errorf("listing the members of %s: %w", c.Name, err)
	}
	var out []etcdv1alpha2.EtcdMember
	for _, m := range list.Items {
		if ControlledBy(&m, c.UID) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("EtcdCluster %s/%s has no members; step 2 did not run", c.Namespace, c.Name)
	}
	return out, nil
}

func (a *Adopter) logf(format string, args ...any) {
	if a.Log != nil {
		_, _ = fmt.Fprintf(a.Log, "  "+format+"\n", args...)
	}
}

// waitGone polls until obj is not found.
func (a *Adopter) waitGone(ctx context.Context, obj client.Object, timeout time.Duration) error {
	poll := a.Poll
	if poll == 0 {
		poll = time.Second
	}
	key := client.ObjectKeyFromObject(obj)
	err := wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(ctx context.Context) (bool, error) {
		err := a.Kube.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("waiting for %T %s to be gone: %w", obj, key, err)
	}
	return nil
}

func orDuration(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
