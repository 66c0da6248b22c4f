package crd_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func dailySchedule(namespace, name string) *etcdv1alpha2.EtcdSnapshotSchedule {
	return &etcdv1alpha2.EtcdSnapshotSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: etcdv1alpha2.EtcdSnapshotScheduleSpec{
			ClusterRef:  corev1.LocalObjectReference{Name: "etcd"},
			Schedule:    "0 2 * * *",
			Destination: etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "backups"}},
		},
	}
}

func TestEtcdSnapshotScheduleRules(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	cases := []struct {
		name      string
		create    func(*etcdv1alpha2.EtcdSnapshotSchedule)
		wantField string
		wantMsg   string
	}{
		{name: "daily at 02:00"},
		{name: "shorthand in a time zone", create: func(s *etcdv1alpha2.EtcdSnapshotSchedule) {
			s.Spec.Schedule, s.Spec.TimeZone = "@hourly", ptr.To("Europe/Berlin")
		}},
		{name: "every minute to S3 with a private CA and retention", create: func(s *etcdv1alpha2.EtcdSnapshotSchedule) {
			s.Spec.Schedule = "* * * * *"
			s.Spec.Destination = etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3SnapshotLocation{
				Endpoint: "https://s3.storage:8333", Bucket: "etcd", ForcePathStyle: true,
				CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"},
				CASecretRef:          &corev1.LocalObjectReference{Name: "s3-ca"},
			}}
			s.Spec.Retention = &etcdv1alpha2.SnapshotRetention{KeepLast: ptr.To[int32](3), KeepDaily: ptr.To[int32](7)}
		}},
		{name: "four cron fields", create: func(s *etcdv1alpha2.EtcdSnapshotSchedule) { s.Spec.Schedule = "0 2 * *" },
			wantField: "spec.schedule", wantMsg: etcdv1alpha2.MsgScheduleCron},
		{name: "CRON_TZ instead of timeZone", create: func(s *etcdv1alpha2.EtcdSnapshotSchedule) { s.Spec.Schedule = "CRON_TZ=UTC 0 2 * * *" },
			wantField: "spec.schedule", wantMsg: etcdv1alpha2.MsgScheduleCron},
		{name: "a time zone that is no IANA name", create: func(s *etcdv1alpha2.EtcdSnapshotSchedule) { s.Spec.TimeZone = ptr.To("UTC+2 hours") },
			wantField: "spec.timeZone", wantMsg: etcdv1alpha2.MsgScheduleTimeZone},
		{name: "retention that keeps nothing", create: func(s *etcdv1alpha2.EtcdSnapshotSchedule) { s.Spec.Retention = &etcdv1alpha2.SnapshotRetention{} },
			wantField: "spec.retention", wantMsg: etcdv1alpha2.MsgRetentionEmpty},
		{name: "keepLast 0", create: func(s *etcdv1alpha2.EtcdSnapshotSchedule) {
			s.Spec.Retention = &etcdv1alpha2.SnapshotRetention{KeepLast: ptr.To[int32](0)}
		}, wantField: "spec.retention.keepLast", wantMsg: "greater than or equal to 1"},
		{name: "no cluster", create: func(s *etcdv1alpha2.EtcdSnapshotSchedule) { s.Spec.ClusterRef.Name = "" },
			wantField: "spec.clusterRef", wantMsg: etcdv1alpha2.MsgScheduleClusterRefName},
		{name: "two destinations", create: func(s *etcdv1alpha2.EtcdSnapshotSchedule) {
			s.Spec.Destination.S3 = &etcdv1alpha2.S3SnapshotLocation{Endpoint: "http://s3:8333", Bucket: "etcd"}
		}, wantField: "spec.destination", wantMsg: etcdv1alpha2.MsgSnapshotLocationOneOf},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			schedule := dailySchedule(ns, fmt.Sprintf("s%d", i))
			if tc.create != nil {
				tc.create(schedule)
			}
			err := k8sClient.Create(t.Context(), schedule)
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

// TestEtcdSnapshotScheduleDefaults: what a user leaves out is written down by the API server, so
// `kubectl get -o yaml` shows the policy in force.
func TestEtcdSnapshotScheduleDefaults(t *testing.T) {
	t.Parallel()
	s := dailySchedule(newNamespace(t), "defaults")
	if err := k8sClient.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if s.Spec.ConcurrencyPolicy != etcdv1alpha2.ConcurrencyForbid {
		t.Errorf("concurrencyPolicy = %q, want Forbid", s.Spec.ConcurrencyPolicy)
	}
	if got := ptr.Deref(s.Spec.SuccessfulSnapshotsHistoryLimit, -1); got != 7 {
		t.Errorf("successfulSnapshotsHistoryLimit = %d, want 7", got)
	}
	if got := ptr.Deref(s.Spec.FailedSnapshotsHistoryLimit, -1); got != 3 {
		t.Errorf("failedSnapshotsHistoryLimit = %d, want 3", got)
	}
}
