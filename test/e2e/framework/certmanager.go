//go:build e2e

package framework

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/hack/binaries/pinned"
	"github.com/etcd-operator/etcd-operator/hack/localcluster/cluster"
)

// certManagerTimeout bounds each wait of installing or removing cert-manager.
const certManagerTimeout = 3 * time.Minute

// certManagerGroupVersion is the API cert-manager's CRDs serve.
const certManagerGroupVersion = "cert-manager.io/v1"

// InstallCertManager installs cert-manager into the cluster, or brings an installation up to
// date: the cert-manager.io CRDs of the pinned release, read from the module cache, and the
// controllers of hack/certmanager in CertManagerNamespace, from the image the local cluster's
// up imported (docs/local-cluster.md, "cert-manager"). It returns once the API server serves
// Certificates and the controller is Available. Safe to call from several tests: objects that
// exist are updated in place. cert-manager stays installed for later tests.
func (s *Suite) InstallCertManager(ctx context.Context) error {
	version, crdDir, err := certManagerSources(ctx)
	if err != nil {
		return err
	}
	image := cluster.CertManagerImage(version)
	images, err := s.NodeImages(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(images, image) {
		return fmt.Errorf("installing cert-manager: %w: %s (`make cluster-up` from a work tree that has hack/certmanager builds and imports it)", ErrNoImage, image)
	}
	crds, err := CertManagerCRDs(crdDir)
	if err != nil {
		return err
	}
	c, err := s.NewClient(apiextensionsv1.AddToScheme)
	if err != nil {
		return err
	}
	if err := s.waitNamespace(ctx, CertManagerNamespace, false); err != nil {
		return err
	}
	for _, crd := range crds {
		if err := createOrUpdate(ctx, c, crd); err != nil {
			return err
		}
	}
	if err := s.waitCertManagerAPI(ctx, true); err != nil {
		return err
	}
	for _, o := range certManagerObjects(image) {
		if err := createOrUpdate(ctx, c, o); err != nil {
			return err
		}
	}
	return s.WaitForDeploymentAvailable(ctx, CertManagerNamespace, certManagerName, certManagerTimeout)
}

// RemoveCertManager removes what InstallCertManager installed, so that a test can see a cluster
// without cert-manager (CertManagerNotInstalled). Deleting the CRDs deletes every Certificate,
// CertificateRequest, Issuer and ClusterIssuer in the cluster: a test that calls it must not run
// in parallel with tests that use cert-manager. It returns once the API server no longer serves
// cert-manager.io/v1 and the namespace is gone; nothing installed is not an error.
func (s *Suite) RemoveCertManager(ctx context.Context) error {
	version, crdDir, err := certManagerSources(ctx)
	if err != nil {
		return err
	}
	crds, err := CertManagerCRDs(crdDir)
	if err != nil {
		return err
	}
	c, err := s.NewClient(apiextensionsv1.AddToScheme)
	if err != nil {
		return err
	}
	objects := certManagerObjects(cluster.CertManagerImage(version))
	// The controller first, so it does not react to its kinds going away; then the CRDs.
	for _, o := range append([]client.Object{objects[len(objects)-1]}, asObjects(crds)...) {
		if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing cert-manager: deleting %T %s: %w", o, o.GetName(), err)
		}
	}
	if err := s.waitCertManagerAPI(ctx, false); err != nil {
		return err
	}
	for _, o := range objects[:len(objects)-1] {
		if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing cert-manager: deleting %T %s: %w", o, o.GetName(), err)
		}
	}
	return s.waitNamespace(ctx, CertManagerNamespace, true)
}

// certManagerSources finds the pinned cert-manager version and its CRD folder in the module
// cache (downloading the module if it is not there).
func certManagerSources(ctx context.Context) (version, crdDir string, err error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	root, err := pinned.FindRepoRoot(wd)
	if err != nil {
		return "", "", err
	}
	if version, err = pinned.CertManagerVersion(root); err != nil {
		return "", "", err
	}
	cacheDir, err := pinned.DefaultCacheDir()
	if err != nil {
		return "", "", err
	}
	versions, err := pinned.LoadVersions(root)
	if err != nil {
		return "", "", err
	}
	crdDir, err = pinned.NewBuilder(cacheDir, versions, io.Discard).CertManagerCRDs(ctx, root)
	return version, crdDir, err
}

// createOrUpdate creates o, or replaces the spec of the object of that name with o's. A
// Namespace that exists is left alone.
func createOrUpdate(ctx context.Context, c client.Client, o client.Object) error {
	err := c.Create(ctx, o.DeepCopyObject().(client.Object))
	_, isNamespace := o.(*corev1.Namespace)
	switch {
	case err == nil, apierrors.IsAlreadyExists(err) && isNamespace:
		return nil
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		have := o.DeepCopyObject().(client.Object)
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), have); err != nil {
			return err
		}
		want := o.DeepCopyObject().(client.Object)
		want.SetResourceVersion(have.GetResourceVersion())
		return c.Update(ctx, want)
	})
	if err != nil {
		return fmt.Errorf("updating %T %s: %w", o, o.GetName(), err)
	}
	return nil
}

// waitCertManagerAPI waits until discovery serves Certificates in cert-manager.io/v1 (served) or
// no longer serves that group version at all (!served): what the operator's probe asks.
func (s *Suite) waitCertManagerAPI(ctx context.Context, served bool) error {
	what := map[bool]string{true: "cert-manager.io/v1 Certificates served", false: "cert-manager.io/v1 no longer served"}[served]
	return Poll(ctx, what, certManagerTimeout, time.Second, func(context.Context) (bool, string, error) {
		list, err := s.Discovery.ServerResourcesForGroupVersion(certManagerGroupVersion)
		switch {
		case apierrors.IsNotFound(err):
			return !served, "not served", nil
		case err != nil:
			return false, err.Error(), nil
		}
		for _, r := range list.APIResources {
			if r.Name == "certificates" {
				return served, "certificates served", nil
			}
		}
		return false, fmt.Sprintf("%d resources, no certificates", len(list.APIResources)), nil
	})
}

// waitNamespace waits until namespace does not exist (gone) or at least is not being deleted
// (!gone): a namespace that is terminating refuses new objects.
func (s *Suite) waitNamespace(ctx context.Context, namespace string, gone bool) error {
	what := map[bool]string{true: "namespace " + namespace + " gone", false: "namespace " + namespace + " not terminating"}[gone]
	return Poll(ctx, what, certManagerTimeout, time.Second, func(ctx context.Context) (bool, string, error) {
		ns, err := s.Kube.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return true, "gone", nil
		case err != nil:
			return false, err.Error(), nil
		}
		return !gone && ns.DeletionTimestamp == nil, "phase " + string(ns.Status.Phase), nil
	})
}

// asObjects lists crds as client.Objects.
func asObjects(crds []*apiextensionsv1.CustomResourceDefinition) []client.Object {
	out := make([]client.Object, 0, len(crds))
	for _, c := range crds {
		out = append(out, c)
	}
	return out
}
