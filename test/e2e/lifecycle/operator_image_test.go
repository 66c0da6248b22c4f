//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// operatorImageTag is the second name the test gives the operator's image on every node.
const operatorImageTag = "e2e-image-change"

// TestOperatorImageChangeRolls points the operator Deployment at another reference of its image
// (the same content under a second tag, as a release would bring a new one) and expects the PVC
// members of a 3-member cluster, under write traffic, to be restarted one at a time with the same
// member IDs: their Pods run the data-dir guard from the operator's image, which is part of their
// template hash (docs/lifecycle.md, "Rolling updates"). Records roll-operator-image-{1,2,3},
// roll-operator-image-total and write-gap-max.
//
// Not parallel: it changes the one operator every other scenario relies on, and its new image
// rolls every PVC member in the cluster. go test runs it while no parallel test of this package
// runs (they start only after every sequential test finished), and `make e2e` runs packages one
// at a time (-p 1). The Deployment's image is restored in a cleanup, also on failure.
func TestOperatorImageChangeRolls(t *testing.T) {
	f := framework.NewTest(t)
	requireOperator(f)
	tags := f.RequireNodeImageTags()
	d, err := f.OperatorDeployment(f.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	container := managerContainer(d)
	oldImage := container.Image
	newImage := imageRepository(oldImage) + ":" + operatorImageTag

	const name = "rollopimg"
	createCluster(f, newCluster(f, name, 3))
	ec := waitConverged(f, name, 3, bootstrapTimeout)
	clusterID := ec.Status.ClusterID
	before := checkMembership(f, ec, 3)
	requireRunningTemplate(f, name, guardImageIs(oldImage))
	load := startLoad(f, name)
	obs := observeMembership(f, name)

	tagImage(f, tags, oldImage, newImage)
	// Registered after the untag, so it runs before it: the operator leaves the new name first.
	t.Cleanup(func() { setOperatorImage(f, d.Name, container.Name, oldImage) })

	s := sampleRoll(f, name)
	start := time.Now()
	if err := patchOperator(f.Ctx, f, d.Name, operatorImagePatch(container.Name, newImage)); err != nil {
		t.Fatal(err)
	}
	if err := waitOperatorRolled(f.Ctx, f, d.Name); err != nil {
		t.Fatal(err)
	}
	f.Record("operator-image-rollout", since(start), "operator Deployment image changed → its new Pod available")
	ec = waitGuardRolled(f, name, 3, newImage)
	f.Record("roll-operator-image-total", since(start), "operator image changed → every PVC member restarted on the new guard image, converged")
	s.record(f, "roll-operator-image", "operator image change on 3 PVC members")
	if ec.Status.UpdatedMembers != 3 {
		t.Errorf("updatedMembers %d, want 3", ec.Status.UpdatedMembers)
	}
	if after := checkMembership(f, ec, 3); !maps.Equal(after, before) {
		t.Errorf("members %v, were %v: a member was replaced instead of restarted", after, before)
	}
	requireRunningTemplate(f, name, guardImageIs(newImage))
	obs.check(f, clusterID)
	requireHealed(f, name, 3, clusterID)
	load.verify(f, "operator image change rolled across 3 PVC members")
	// Deleted now, so that restoring the operator's image does not roll this cluster back.
	deleteCluster(f, name)
}

// tagImage names source target on every node, the test's stand-in for pushing a new tag
// (framework.NodeImageTags), and removes that name in a cleanup.
func tagImage(f *framework.Test, tags framework.NodeImageTags, source, target string) {
	f.T.Helper()
	if err := tags.TagImage(f.Ctx, source, target); err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := tags.UntagImage(ctx, target); err != nil {
			f.T.Errorf("removing the test's image name %s: %v", target, err)
		}
	})
}

// managerContainer is the operator Deployment's container "manager" (the one config/manager and
// the chart name so), else its first.
func managerContainer(d *appsv1.Deployment) corev1.Container {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			return c
		}
	}
	return d.Spec.Template.Spec.Containers[0]
}

// imageRepository is image without its tag or digest.
func imageRepository(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}

// guardImageIs checks that a member Pod installs the data-dir guard from image.
func guardImageIs(image string) func(*corev1.Pod) error {
	return func(p *corev1.Pod) error {
		for _, c := range p.Spec.InitContainers {
			if c.Name == desired.GuardContainerName {
				if c.Image != image {
					return fmt.Errorf("guard image %s, want %s", c.Image, image)
				}
				return nil
			}
		}
		return fmt.Errorf("no %s init container", desired.GuardContainerName)
	}
}

// waitGuardRolled waits until the n member Pods of the cluster are Ready with the data-dir guard
// from image, then until the cluster converged, and returns it. Status says converged until the
// new operator's first pass authorises the new hashes, so the guard is awaited first.
func waitGuardRolled(f *framework.Test, name string, n int, image string) *etcdv1alpha2.EtcdCluster {
	f.T.Helper()
	err := f.Poll("every member Pod on guard image "+image, rollTimeout, func(ctx context.Context) (bool, string, error) {
		pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
		if err != nil {
			return false, errState(ctx, err), nil
		}
		var old []string
		for i := range pods.Items {
			if guardImageIs(image)(&pods.Items[i]) != nil || !framework.PodReady(&pods.Items[i]) {
				old = append(old, pods.Items[i].Name)
			}
		}
		return len(pods.Items) == n && len(old) == 0, fmt.Sprintf("%d Pods, not yet Ready on the new guard image: %v", len(pods.Items), old), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	return waitConverged(f, name, n, rollTimeout)
}

func operatorImagePatch(container, image string) string {
	return fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":%q,"image":%q}]}}}}`, container, image)
}

// setOperatorImage puts image back on the operator Deployment and waits for its rollout.
func setOperatorImage(f *framework.Test, deployment, container, image string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := patchOperator(ctx, f, deployment, operatorImagePatch(container, image)); err != nil {
		f.T.Errorf("restoring the operator image %s: %v", image, err)
		return
	}
	if err := waitOperatorRolled(ctx, f, deployment); err != nil {
		f.T.Errorf("operator after restoring its image %s: %v", image, err)
	}
}
