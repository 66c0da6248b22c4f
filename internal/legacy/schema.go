package legacy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group and Version of the legacy API.
const (
	Group   = "etcd.aenix.io"
	Version = "v1alpha1"
)

// Kinds of the legacy API.
const (
	KindEtcdCluster        = "EtcdCluster"
	KindEtcdBackup         = "EtcdBackup"
	KindEtcdBackupSchedule = "EtcdBackupSchedule"
)

// GroupVersion is etcd.aenix.io/v1alpha1, also the value etcd-migrate writes into the
// migrated-from annotation.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// Kinds and resources of the legacy API, for a dynamic client.
var (
	EtcdClusterGVK        = GroupVersion.WithKind(KindEtcdCluster)
	EtcdBackupGVK         = GroupVersion.WithKind(KindEtcdBackup)
	EtcdBackupScheduleGVK = GroupVersion.WithKind(KindEtcdBackupSchedule)

	EtcdClusterGVR        = GroupVersion.WithResource("etcdclusters")
	EtcdBackupGVR         = GroupVersion.WithResource("etcdbackups")
	EtcdBackupScheduleGVR = GroupVersion.WithResource("etcdbackupschedules")
)

// DecodeCluster reads a legacy EtcdCluster from what a dynamic client returned.
func DecodeCluster(u *unstructured.Unstructured) (*EtcdCluster, error) {
	out := &EtcdCluster{}
	return out, decode(u, EtcdClusterGVK, out)
}

// DecodeBackup reads a legacy EtcdBackup.
func DecodeBackup(u *unstructured.Unstructured) (*EtcdBackup, error) {
	out := &EtcdBackup{}
	return out, decode(u, EtcdBackupGVK, out)
}

// DecodeBackupSchedule reads a legacy EtcdBackupSchedule.
func DecodeBackupSchedule(u *unstructured.Unstructured) (*EtcdBackupSchedule, error) {
	out := &EtcdBackupSchedule{}
	return out, decode(u, EtcdBackupScheduleGVK, out)
}

// decode checks the kind first: the converter would fill any struct from any object, and a
// v1alpha2 EtcdCluster of the same name must never be mistaken for a legacy one.
func decode(u *unstructured.Unstructured, want schema.GroupVersionKind, into any) error {
	if u == nil {
		return fmt.Errorf("decoding %s: no object", want.Kind)
	}
	if got := u.GroupVersionKind(); got != want {
		return fmt.Errorf("decoding %s %s/%s: object is %s, want %s", want.Kind, u.GetNamespace(), u.GetName(), got, want)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), into); err != nil {
		return fmt.Errorf("decoding %s %s/%s: %w", want.Kind, u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// ToUnstructured renders a legacy object for a dynamic client, with its apiVersion and kind
// set: obj is one of *EtcdCluster, *EtcdBackup, *EtcdBackupSchedule.
func ToUnstructured(obj any) (*unstructured.Unstructured, error) {
	var gvk schema.GroupVersionKind
	switch obj.(type) {
	case *EtcdCluster:
		gvk = EtcdClusterGVK
	case *EtcdBackup:
		gvk = EtcdBackupGVK
	case *EtcdBackupSchedule:
		gvk = EtcdBackupScheduleGVK
	default:
		return nil, fmt.Errorf("encoding a legacy object: unsupported type %T", obj)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding a legacy %s: %w", gvk.Kind, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u, nil
}
