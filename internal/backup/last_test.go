package backup

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func TestLastSnapshot(t *testing.T) {
	t.Parallel()
	at := func(name, cluster string, phase etcdv1alpha2.SnapshotPhase, minutes int) etcdv1alpha2.EtcdSnapshot {
		s := etcdv1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: cluster}}}
		s.Status.Phase = phase
		s.Status.CompletedAt = &metav1.Time{Time: t0.Add(time.Duration(minutes) * time.Minute)}
		s.Status.Artifact = &etcdv1alpha2.SnapshotArtifact{URI: "s3://b/" + name + ".db", Revision: int64(minutes)}
		return s
	}
	snaps := []etcdv1alpha2.EtcdSnapshot{
		at("old", "etcd", etcdv1alpha2.SnapshotPhaseComplete, 1), at("failed", "etcd", etcdv1alpha2.SnapshotPhaseFailed, 5),
		at("other", "other", etcdv1alpha2.SnapshotPhaseComplete, 9), at("new", "etcd", etcdv1alpha2.SnapshotPhaseComplete, 3),
	}
	got := LastSnapshot(nil, "etcd", snaps)
	if got == nil || got.Name != "new" || got.URI != "s3://b/new.db" || got.Revision != 3 {
		t.Fatalf("LastSnapshot = %+v, want new", got)
	}
	// The record stays when its object is gone, and a newer record is not replaced by older objects.
	if kept := LastSnapshot(got, "etcd", snaps[:1]); kept == nil || kept.Name != "new" {
		t.Errorf("after the history limit deleted it: %+v, want new kept", kept)
	}
	if none := LastSnapshot(nil, "etcd", snaps[1:3]); none != nil {
		t.Errorf("no Complete snapshot of etcd: %+v, want nil", none)
	}
}

func TestArtifactSize(t *testing.T) {
	t.Parallel()
	snap := func(name, cluster string, phase etcdv1alpha2.SnapshotPhase, size int64) etcdv1alpha2.EtcdSnapshot {
		s := etcdv1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: cluster}}}
		s.Status.Phase = phase
		if phase == etcdv1alpha2.SnapshotPhaseComplete {
			s.Status.Artifact = &etcdv1alpha2.SnapshotArtifact{SizeBytes: size}
		}
		return s
	}
	snaps := []etcdv1alpha2.EtcdSnapshot{snap("a", "etcd", etcdv1alpha2.SnapshotPhaseComplete, 10),
		snap("b", "other", etcdv1alpha2.SnapshotPhaseComplete, 20), snap("c", "etcd", etcdv1alpha2.SnapshotPhaseStarted, 0)}
	for _, tc := range []struct {
		last *etcdv1alpha2.LastSnapshot
		want *int64
	}{
		{&etcdv1alpha2.LastSnapshot{Name: "a"}, ptr.To[int64](10)},
		{nil, nil},
		{&etcdv1alpha2.LastSnapshot{Name: "gone"}, nil}, // a history limit deleted it
		{&etcdv1alpha2.LastSnapshot{Name: "b"}, nil},    // another cluster's
		{&etcdv1alpha2.LastSnapshot{Name: "c"}, nil},    // not Complete (re-created under the name)
	} {
		if got := ArtifactSize(tc.last, "etcd", snaps); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ArtifactSize(%+v) = %v, want %v", tc.last, ptr.Deref(got, -1), ptr.Deref(tc.want, -1))
		}
	}
}
