package crd_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/utils/apiserver"
)

// newNamespace creates a namespace for one test, so tests never see each other's objects.
func newNamespace(t *testing.T) string {
	t.Helper()
	return apiserver.NewNamespace(t, k8sClient, "crd-")
}

// minimalCluster is the smallest EtcdCluster a user can write.
func minimalCluster(namespace, name string) *etcdv1alpha2.EtcdCluster {
	return &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       etcdv1alpha2.EtcdClusterSpec{Version: "3.6.5"},
	}
}

func secretRef(name string) *corev1.LocalObjectReference {
	return &corev1.LocalObjectReference{Name: name}
}

func withServerTLS(c *etcdv1alpha2.EtcdCluster) {
	c.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Client: &etcdv1alpha2.ClientTLS{ServerSecretRef: secretRef("server-tls")}}
}

func withAuth(c *etcdv1alpha2.EtcdCluster) {
	withServerTLS(c)
	c.Spec.Auth = &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: secretRef("root")}
}

func withMemory(size string) func(*etcdv1alpha2.EtcdCluster) {
	return func(c *etcdv1alpha2.EtcdCluster) {
		c.Spec.Storage.Medium = etcdv1alpha2.StorageMediumMemory
		c.Spec.Storage.Size = ptr.To(resource.MustParse(size))
	}
}

func withS3Restore(key string) func(*etcdv1alpha2.EtcdCluster) {
	return func(c *etcdv1alpha2.EtcdCluster) {
		c.Spec.Bootstrap = &etcdv1alpha2.BootstrapSpec{Restore: &etcdv1alpha2.RestoreSpec{
			Source: etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3SnapshotLocation{
				Endpoint: "https://s3.example.test", Bucket: "backups", Key: key,
				CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"},
			}},
		}}
	}
}

func withStorageClass(name string) func(*etcdv1alpha2.EtcdCluster) {
	return func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Storage.StorageClassName = ptr.To(name) }
}

// requireInvalid asserts that err is the API server's Invalid error and that one of its causes
// is reported on field with a message containing want.
func requireInvalid(t *testing.T, err error, field, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the API server accepted the object; want it rejected on %s with %q", field, want)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("got %v; want an Invalid error on %s with %q", err, field, want)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("error %v carries no details", err)
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == field && strings.Contains(cause.Message, want) {
			return
		}
	}
	t.Fatalf("no cause on %s containing %q; causes: %+v", field, want, status.Status().Details.Causes)
}

// createAndUpdate creates the object built by create, then, when update is set, applies update to
// the stored object and writes it back. It returns the error of the last write.
func createAndUpdate[T client.Object](t *testing.T, obj T, update func(T)) error {
	t.Helper()
	err := k8sClient.Create(t.Context(), obj)
	if update == nil || err != nil {
		if update != nil {
			t.Fatalf("creating the starting object: %v", err)
		}
		return err
	}
	update(obj)
	return k8sClient.Update(t.Context(), obj)
}
