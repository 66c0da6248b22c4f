package backup

import (
	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// LastSnapshot is the newer of a cluster's recorded status.lastSnapshot and the newest Complete
// EtcdSnapshot of it among snapshots (docs/api.md, "EtcdCluster status"): the record outlives
// the object, so a history limit that deletes old EtcdSnapshots never makes a cluster look as
// if it had no backup.
func LastSnapshot(recorded *etcdv1alpha2.LastSnapshot, cluster string, snapshots []etcdv1alpha2.EtcdSnapshot) *etcdv1alpha2.LastSnapshot {
	newest := recorded
	for i := range snapshots {
		s := &snapshots[i]
		if s.Spec.ClusterRef.Name != cluster || s.Status.Phase != etcdv1alpha2.SnapshotPhaseComplete || s.Status.CompletedAt == nil {
			continue
		}
		if newest != nil && !newest.CompletedAt.Before(s.Status.CompletedAt) {
			continue
		}
		newest = &etcdv1alpha2.LastSnapshot{Name: s.Name, CompletedAt: *s.Status.CompletedAt.DeepCopy()}
		if a := s.Status.Artifact; a != nil {
			newest.URI, newest.Revision = a.URI, a.Revision
		}
	}
	return newest.DeepCopy()
}

// ArtifactSize is the artifact size of the snapshot last names (a cluster's lastSnapshot) among
// snapshots, nil when last is nil or its EtcdSnapshot is not among them (a history limit deleted
// it): status.lastSnapshot does not record the size.
func ArtifactSize(last *etcdv1alpha2.LastSnapshot, cluster string, snapshots []etcdv1alpha2.EtcdSnapshot) *int64 {
	if last == nil {
		return nil
	}
	for i := range snapshots {
		s := &snapshots[i]
		if s.Name == last.Name && s.Spec.ClusterRef.Name == cluster && s.Status.Phase == etcdv1alpha2.SnapshotPhaseComplete && s.Status.Artifact != nil {
			size := s.Status.Artifact.SizeBytes
			return &size
		}
	}
	return nil
}
