package plan

import (
	"fmt"
	"path"
	"strings"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
)

// stepBackups carries the legacy backup objects over: an EtcdBackup becomes an EtcdSnapshot
// (a new snapshot, to the same place), an EtcdBackupSchedule an EtcdSnapshotSchedule when that
// kind is served, else a printed CronJob, the legacy schedule then staying in place.
func stepBackups(tr *translate.Result, _ []etcdv1alpha2.EtcdMember, in Inputs) Step {
	s := Step{Title: "Carry the legacy backups over"}
	for _, b := range in.Backups {
		s.Actions = append(s.Actions,
			Action{Verb: VerbCreate, Kind: "EtcdSnapshot", Name: b.Name, Change: "a new snapshot of " + tr.Cluster.Name + " to " + Destination(b.Spec.Destination)},
			Action{Verb: VerbDelete, Kind: "EtcdBackup." + legacy.Group, Name: b.Name, Change: "its artifact stays where it is"})
	}
	for _, sc := range in.Schedules {
		if in.Config.SnapshotScheduleServed {
			s.Actions = append(s.Actions,
				Action{Verb: VerbCreate, Kind: "EtcdSnapshotSchedule", Name: sc.Name, Change: fmt.Sprintf("schedule %q to %s", sc.Spec.Schedule, Destination(sc.Spec.Destination))},
				Action{Verb: VerbDelete, Kind: "EtcdBackupSchedule." + legacy.Group, Name: sc.Name, Change: "its CronJob goes with it"})
			continue
		}
		s.Actions = append(s.Actions, Action{Verb: VerbKeep, Kind: "EtcdBackupSchedule." + legacy.Group, Name: sc.Name, Change: fmt.Sprintf(
			"EtcdSnapshotSchedule is not served: a CronJob with its ServiceAccount, Role and RoleBinding that creates EtcdSnapshots on %q to %s is printed to apply by hand; delete the legacy schedule then",
			sc.Spec.Schedule, Destination(sc.Spec.Destination))})
	}
	if len(s.Actions) == 0 {
		s.Actions = []Action{{Verb: VerbSkip, Kind: "EtcdBackup." + legacy.Group, Name: "-", Change: "no legacy backups or schedules for this cluster"}}
	}
	return s
}

// Destination renders a legacy backup destination as this project's snapshot location: an S3
// prefix or a PVC folder, the directory of the legacy exact key or path (snapshots here are
// written to <prefix>/<snapshot>.db).
func Destination(d legacy.BackupDestination) string {
	switch {
	case d.S3 != nil:
		return "s3://" + d.S3.Bucket + "/" + prefixOf(d.S3.Key)
	case d.PVC != nil:
		return "pvc://" + d.PVC.ClaimName + "/" + prefixOf(d.PVC.SubPath)
	}
	return "(no destination)"
}

// SnapshotLocation is Destination as this project's API type.
func SnapshotLocation(d legacy.BackupDestination) etcdv1alpha2.SnapshotLocation {
	switch {
	case d.S3 != nil:
		return etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3SnapshotLocation{
			Endpoint: d.S3.Endpoint, Bucket: d.S3.Bucket, Key: prefixOf(d.S3.Key), CredentialsSecretRef: d.S3.CredentialsSecretRef,
			Region: d.S3.Region, ForcePathStyle: d.S3.ForcePathStyle,
		}}
	case d.PVC != nil:
		return etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: d.PVC.ClaimName, SubPath: prefixOf(d.PVC.SubPath)}}
	}
	return etcdv1alpha2.SnapshotLocation{}
}

// prefixOf is the directory of an exact key or path; "" at the root.
func prefixOf(p string) string {
	dir := path.Dir(strings.Trim(p, "/"))
	if dir == "." {
		return ""
	}
	return dir
}
