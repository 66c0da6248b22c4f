//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

const (
	// helmRelease names the release; it contains the chart's name, so the objects are named
	// etcd-operator like config/default's (docs/helm.md, "Install").
	helmRelease = "etcd-operator"
	// helmUpgradeTag is the second name the test gives the operator's image for `helm upgrade`;
	// not operatorImageTag, so that the two scenarios never share a name.
	helmUpgradeTag = "e2e-helm-upgrade"
	// helmTimeout bounds each helm command's own wait for the release's objects.
	helmTimeout = "3m"
)

// helmChartDir is the chart in the work tree, from this package's folder.
var helmChartDir = filepath.Join("..", "..", "..", "charts", "etcd-operator")

// TestHelmChart drives the chart as a platform team does (docs/helm.md): `helm install` from the
// work tree with the operator image `make deploy` built and loaded, in the namespace-scoped mode
// (its own namespace, watching the test's), a 3-member cluster bootstrapped through it and keys
// written; `helm upgrade` to a second tag of the image restarts the PVC members one at a time
// under write traffic with the same member IDs (their data-dir guard comes from the operator's
// image, docs/operator.md, "Upgrading the operator") and the keys intact; `helm uninstall`
// removes the operator and its RBAC and leaves the CRDs, the EtcdCluster, its members, Pods,
// PVCs and keys as they were. Records helm-install, helm-bootstrap-3, helm-upgrade,
// roll-helm-upgrade-{1,2,3}, roll-helm-upgrade-total, write-gap-max and helm-uninstall.
//
// The CRDs are the cluster's, from `make deploy`: Helm refuses to adopt objects another tool
// applied, and a release owning them would put every other test's clusters at the mercy of this
// one's uninstall, so the install sets crds.enabled=false; the keep annotation that makes an
// uninstall leave the chart's own CRDs is checked on the rendered chart (test/chart).
//
// Not parallel: the default operator watches every namespace and would manage the test's
// cluster too (no operator can leave a namespace to another), so it is stopped meanwhile, as in
// TestNamespacedInstall, and restored in a cleanup after the release is gone.
func TestHelmChart(t *testing.T) {
	f := framework.NewTest(t, framework.Tools)
	requireOperator(f)
	helm := f.RequireHelm()
	tags := f.RequireNodeImageTags()
	d, err := f.OperatorDeployment(f.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	image := managerContainer(d).Image
	tagImage(f, tags, image, imageRepository(image)+":"+helmUpgradeTag)
	restoreDefault := f.StopOperator()
	opNS := framework.NamespaceName("helm-operator")
	allowInDeletionGuard(f, "system:serviceaccount:"+opNS+":"+helmRelease)
	installChart(f, helm, opNS, image)

	const name = "helmchart"
	start := time.Now()
	createCluster(f, newCluster(f, name, 3))
	ec := waitConverged(f, name, 3, bootstrapTimeout)
	f.Record("helm-bootstrap-3", since(start), "operator installed by helm: create → 3 voters Ready")
	before := checkMembership(f, ec, 3)
	requireRunningTemplate(f, name, guardImageIs(image))
	written := writeKeys(f, name, "helm-", 20)

	upgradeChart(f, helm, opNS, name, ec.Status.ClusterID, before)
	readKeys(f, name, written)

	uninstallChart(f, helm, opNS, name)
	readKeys(f, name, written)

	// Cleaning up: the EtcdMembers' finalizer needs an operator, the default one, back now.
	deleteCluster(f, name)
	if err := restoreDefault(); err != nil {
		t.Fatalf("restoring the default operator: %v", err)
	}
	waitNothingLeft(f, name, false)
}

// installChart installs the chart as docs/helm.md, "Namespace-scoped install", shows: into
// opNS (created by helm), watching the test's namespace, without the cluster-scoped CRDs and
// deletion guard, with image. A cleanup removes the release and opNS (dumping opNS first if the
// test failed), before the default operator is restored.
func installChart(f *framework.Test, helm *framework.Helm, opNS, image string) {
	f.T.Helper()
	repo := imageRepository(image)
	tag, ok := strings.CutPrefix(image, repo+":")
	if !ok {
		f.T.Fatalf("operator image %s has no tag to give the chart", image)
	}
	f.T.Cleanup(func() { removeRelease(f, helm, opNS) })
	took := helm.MustRun(f, "install", helmRelease, helmChartDir, "--namespace", opNS, "--create-namespace",
		"--set", "image.repository="+repo, "--set", "image.tag="+tag,
		"--set", "manager.watchNamespaces={"+f.Namespace+"}",
		"--set", "crds.enabled=false", "--set", "memberDeletionGuard.enabled=false",
		"--wait", "--timeout", helmTimeout)
	f.Record("helm-install", took, "helm install --wait, namespace-scoped: release created → operator available")
	if err := waitRolled(f.Ctx, f, opNS, helmRelease); err != nil {
		f.T.Fatal(err)
	}
	requireNoClusterBinding(f, opNS, helmRelease)
}

// upgradeChart runs `helm upgrade` to the second tag of the operator's image under write
// traffic and waits for the roll it causes: every member restarted once, one at a time (no
// two member Pods down at once), same member IDs, the cluster ID and quorum kept throughout
// (the membership observer; the traffic's history linearizable, no acknowledged write lost).
func upgradeChart(f *framework.Test, helm *framework.Helm, opNS, name, clusterID string, before map[string]string) {
	f.T.Helper()
	newImage := imageRepository(managerImage(f, opNS)) + ":" + helmUpgradeTag
	load := startLoad(f, name)
	obs := observeMembership(f, name)
	s := sampleRoll(f, name)
	start := time.Now()
	took := helm.MustRun(f, "upgrade", helmRelease, helmChartDir, "--namespace", opNS, "--reuse-values",
		"--set", "image.tag="+helmUpgradeTag, "--wait", "--timeout", helmTimeout)
	f.Record("helm-upgrade", took, "helm upgrade --wait to a new operator image: → new operator Pod available")
	if got := managerImage(f, opNS); got != newImage {
		f.T.Fatalf("operator image after helm upgrade %s, want %s", got, newImage)
	}
	ec := waitGuardRolled(f, name, 3, newImage)
	f.Record("roll-helm-upgrade-total", since(start), "helm upgrade → every PVC member restarted on the new guard image, converged")
	s.record(f, "roll-helm-upgrade", "helm upgrade of the operator image on 3 PVC members")
	if ec.Status.UpdatedMembers != 3 {
		f.T.Errorf("updatedMembers %d, want 3", ec.Status.UpdatedMembers)
	}
	if after := checkMembership(f, ec, 3); !maps.Equal(after, before) {
		f.T.Errorf("members %v, were %v: a member was replaced instead of restarted", after, before)
	}
	obs.check(f, clusterID)
	requireHealed(f, name, 3, clusterID)
	load.verify(f, "helm upgrade rolled the operator image across 3 PVC members")
}

// managerImage is the image of the release's operator Deployment.
func managerImage(f *framework.Test, opNS string) string {
	f.T.Helper()
	d, err := f.Kube.AppsV1().Deployments(opNS).Get(f.Ctx, helmRelease, metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	return managerContainer(d).Image
}

// uninstallChart runs `helm uninstall` and checks what it removed and what it left: the
// operator Deployment and the Role it held in the test's namespace are gone; the project's CRDs,
// the EtcdCluster and its EtcdMembers stay, not being deleted, and the member Pods and PVCs are
// the same objects as before.
func uninstallChart(f *framework.Test, helm *framework.Helm, opNS, name string) {
	f.T.Helper()
	pods, pvcs := f.PodUIDs(podSelector(name)), f.PVCUIDs(podSelector(name))
	took := helm.MustRun(f, "uninstall", helmRelease, "--namespace", opNS, "--wait", "--timeout", helmTimeout)
	f.Record("helm-uninstall", took, "helm uninstall --wait: → the release's objects gone")
	if _, err := f.Kube.AppsV1().Deployments(opNS).Get(f.Ctx, helmRelease, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		f.T.Errorf("operator Deployment %s/%s after helm uninstall: %v, want it gone", opNS, helmRelease, err)
	}
	if _, err := f.Kube.RbacV1().Roles(f.Namespace).Get(f.Ctx, helmRelease, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		f.T.Errorf("Role %s in the watched namespace after helm uninstall: %v, want it gone", helmRelease, err)
	}
	requireCRDsKept(f)
	ec, err := getCluster(f.Ctx, f, name)
	if err != nil || ec.DeletionTimestamp != nil {
		f.T.Fatalf("EtcdCluster %s after helm uninstall: %v (deleting: %v), want it kept", name, err, err == nil && ec.DeletionTimestamp != nil)
	}
	members, err := listMembers(f.Ctx, f, name)
	if err != nil {
		f.T.Fatal(err)
	}
	for _, m := range members {
		if m.DeletionTimestamp != nil {
			f.T.Errorf("EtcdMember %s is being deleted after helm uninstall", m.Name)
		}
	}
	if len(members) != 3 {
		f.T.Errorf("%d EtcdMembers after helm uninstall, want 3", len(members))
	}
	if got := f.PodUIDs(podSelector(name)); !maps.Equal(got, pods) {
		f.T.Errorf("member Pods %v after helm uninstall, were %v", got, pods)
	}
	if got := f.PVCUIDs(podSelector(name)); !maps.Equal(got, pvcs) {
		f.T.Errorf("member PVCs %v after helm uninstall, were %v", got, pvcs)
	}
}

// requireCRDsKept checks that every kind of the project's API group is still served by a CRD
// that is not being deleted.
func requireCRDsKept(f *framework.Test) {
	f.T.Helper()
	gv := etcdv1alpha2.GroupVersion
	list, err := f.Discovery.ServerResourcesForGroupVersion(gv.String())
	if err != nil {
		f.T.Fatalf("discovery of %s after helm uninstall: %v", gv, err)
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	served := 0
	for _, r := range list.APIResources {
		if strings.Contains(r.Name, "/") {
			continue // a subresource
		}
		served++
		crd, err := f.Dynamic.Resource(crds).Get(f.Ctx, r.Name+"."+gv.Group, metav1.GetOptions{})
		if err != nil || crd.GetDeletionTimestamp() != nil {
			f.T.Errorf("CRD %s.%s after helm uninstall: %v, want it kept", r.Name, gv.Group, err)
		}
	}
	if served == 0 {
		f.T.Errorf("no kind of %s served after helm uninstall", gv)
	}
}

// removeRelease uninstalls the release if it is still there and deletes opNS, waiting until it
// is gone, so that the default operator comes back alone. If the test failed, opNS is dumped
// first (the operator's logs and Events) beside the test's own diagnostics.
func removeRelease(f *framework.Test, helm *framework.Helm, opNS string) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if f.T.Failed() {
		if err := f.DumpNamespace(ctx, opNS, filepath.Join(f.ArtifactsDir, "helm-operator"), false); err != nil {
			f.T.Logf("dumping %s: %v", opNS, err)
		}
	}
	if _, err := helm.Run(ctx, "uninstall", helmRelease, "--namespace", opNS, "--ignore-not-found", "--wait", "--timeout", helmTimeout); err != nil {
		f.T.Errorf("removing the release: %v", err)
	}
	err := f.Kube.CoreV1().Namespaces().Delete(ctx, opNS, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		f.T.Errorf("deleting namespace %s: %v", opNS, err)
		return
	}
	err = framework.Poll(ctx, "namespace "+opNS+" gone", 3*time.Minute, framework.DefaultPollInterval, func(ctx context.Context) (bool, string, error) {
		_, err := f.Kube.CoreV1().Namespaces().Get(ctx, opNS, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, fmt.Sprintf("still there (%v)", err), nil
	})
	if err != nil {
		f.T.Error(err)
	}
}
