package crd_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func pvcSnapshot(namespace, name string) *etcdv1alpha2.EtcdSnapshot {
	return &etcdv1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{
			ClusterRef:  corev1.LocalObjectReference{Name: "etcd"},
			Destination: etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "backups"}},
		},
	}
}

func TestEtcdSnapshotRules(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	cases := []struct {
		name      string
		create    func(*etcdv1alpha2.EtcdSnapshot)
		update    func(*etcdv1alpha2.EtcdSnapshot)
		wantField string
		wantMsg   string
	}{
		{name: "pvc destination"},
		{name: "s3 destination with a prefix", create: func(s *etcdv1alpha2.EtcdSnapshot) {
			s.Spec.Destination = etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3SnapshotLocation{
				Endpoint: "http://minio.storage:9000", Bucket: "etcd", Key: "daily", ForcePathStyle: true,
				CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"},
			}}
		}},
		{name: "no destination", create: func(s *etcdv1alpha2.EtcdSnapshot) { s.Spec.Destination = etcdv1alpha2.SnapshotLocation{} },
			wantField: "spec.destination", wantMsg: etcdv1alpha2.MsgSnapshotLocationOneOf},
		{name: "two destinations", create: func(s *etcdv1alpha2.EtcdSnapshot) {
			s.Spec.Destination.S3 = &etcdv1alpha2.S3SnapshotLocation{Endpoint: "http://minio:9000", Bucket: "etcd"}
		}, wantField: "spec.destination", wantMsg: etcdv1alpha2.MsgSnapshotLocationOneOf},
		{name: "no cluster", create: func(s *etcdv1alpha2.EtcdSnapshot) { s.Spec.ClusterRef.Name = "" },
			wantField: "spec", wantMsg: etcdv1alpha2.MsgSnapshotClusterRefName},
		{name: "spec edited", update: func(s *etcdv1alpha2.EtcdSnapshot) { s.Spec.Destination.PVC.SubPath = "elsewhere" },
			wantField: "spec", wantMsg: etcdv1alpha2.MsgSnapshotSpecImmutable},
		{name: "labels edited", update: func(s *etcdv1alpha2.EtcdSnapshot) { s.Labels = map[string]string{"keep": "yes"} }},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			snapshot := pvcSnapshot(ns, fmt.Sprintf("s%d", i))
			if tc.create != nil {
				tc.create(snapshot)
			}
			err := createAndUpdate(t, snapshot, tc.update)
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("want the object accepted, got: %v", err)
				}
				return
			}
			requireInvalid(t, err, tc.wantField, tc.wantMsg)
		})
	}
}

func TestEtcdMemberRules(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	member := func(name string) *etcdv1alpha2.EtcdMember {
		return &etcdv1alpha2.EtcdMember{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       etcdv1alpha2.EtcdMemberSpec{ClusterName: "etcd", Version: "3.6.5", ClusterToken: "token"},
		}
	}
	accepted := member("pending")
	if err := k8sClient.Create(t.Context(), accepted); err != nil {
		t.Fatalf("a pending member (empty initialCluster) must be accepted: %v", err)
	}
	if accepted.Spec.Replicas != 1 {
		t.Errorf("spec.replicas defaulted to %d; want 1", accepted.Spec.Replicas)
	}
	two := member("two")
	two.Spec.Replicas = 2
	requireInvalid(t, k8sClient.Create(t.Context(), two), "spec.replicas", "less than or equal to 1")
	orphan := member("orphan")
	orphan.Spec.ClusterName = ""
	requireInvalid(t, k8sClient.Create(t.Context(), orphan), "spec.clusterName", "at least 1 chars long")
}
