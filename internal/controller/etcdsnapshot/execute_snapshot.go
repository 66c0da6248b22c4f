package etcdsnapshot

import (
	"context"
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdaccess"
)

// errJobNotOurs says a Job under the snapshot's Job name belongs to something else.
var errJobNotOurs = errors.New("a Job of that name exists and is not this snapshot's")

// createJob creates the snapshot's Job, owned by it. A Job of that name that the snapshot owns
// is adopted: the pass that created it crashed before it recorded Started.
func (r *SnapshotReconciler) createJob(ctx context.Context, s *etcdv1alpha2.EtcdSnapshot, o *observation) error {
	c := o.cluster
	in := desired.SnapshotJobInput{Snapshot: s, Cluster: c, Image: r.image,
		CASecret: etcdaccess.ServerSecretName(c), ClientSecret: etcdaccess.OperatorClientSecretName(c)}
	if c.Status.AuthEnabled {
		in.PasswordSecret = etcdaccess.PasswordSecretName(c)
	}
	if err := r.withSchedule(ctx, s, &in); err != nil {
		return err
	}
	job := desired.SnapshotJob(in)
	if err := controllerutil.SetControllerReference(s, job, r.client.Scheme()); err != nil {
		return fmt.Errorf("owning Job %s: %w", job.Name, err)
	}
	err := r.client.Create(ctx, job)
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating Job %s: %w", job.Name, err)
		}
		return nil
	}
	existing := &batchv1.Job{}
	if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(job), existing); err != nil {
		return fmt.Errorf("reading Job %s: %w", job.Name, err)
	}
	if ref := metav1.GetControllerOf(existing); ref == nil || ref.UID != s.UID {
		return fmt.Errorf("creating Job %s: %w", job.Name, errJobNotOurs)
	}
	return nil
}

// withSchedule adds the schedule s belongs to, if any, to the Job's input: its name and UID
// from the controller reference, with which the agent marks the artifact as the schedule's
// (docs/backup-restore.md, "Retention"), and its retention and zone as the schedule says now.
// A schedule that is gone, or that was re-created under the same name (another UID), gives no
// retention: the artifact is still marked, and nothing is pruned on behalf of a schedule this
// snapshot does not belong to.
func (r *SnapshotReconciler) withSchedule(ctx context.Context, s *etcdv1alpha2.EtcdSnapshot, in *desired.SnapshotJobInput) error {
	ref := backup.OwningSchedule(s)
	if ref == nil {
		return nil
	}
	in.ScheduleName, in.ScheduleUID = ref.Name, ref.UID
	schedule := &etcdv1alpha2.EtcdSnapshotSchedule{}
	switch err := r.client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: ref.Name}, schedule); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading EtcdSnapshotSchedule %s: %w", ref.Name, err)
	}
	if schedule.UID == ref.UID {
		in.Retention = schedule.Spec.Retention.DeepCopy()
		in.RetentionTimeZone = ptr.Deref(schedule.Spec.TimeZone, "")
	}
	return nil
}
