//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/hack/localcluster/cluster"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// expansionTimeout bounds an online expansion of 3 PVCs: the operator's patch, the local
// resizer's two writes per PVC, and the member size updates.
const expansionTimeout = 3 * time.Minute

// TestPVCExpansion grows spec.storage.size of a 3-member cluster in the local cluster's
// expandable StorageClass (local-expandable, expanded by its external resizer, see
// docs/local-cluster.md) from 1Gi to 2Gi under write traffic (docs/design/storage.md). Every PVC is
// asked for 2Gi at once and reports it; the members' spec.storage.size follows; the default
// quota (size/2) then rolls each member once, one at a time, and each only after its own volume
// grew (expand first, roll after). Same member IDs and cluster ID, a linearizable history with
// no acknowledged write lost, HashKV equal. Records pvc-expansion-total (patch → every PVC
// reports 2Gi), pvc-expansion-roll-{1,2,3} and pvc-expansion-converged.
func TestPVCExpansion(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t)
	requireOperator(f)
	const name = "grow"
	ec := newCluster(f, name, 3)
	ec.Spec.Storage.StorageClassName = ptr.To(cluster.ExpandableStorageClassName)
	createCluster(f, ec)
	ec = waitConverged(f, name, 3, bootstrapTimeout)
	clusterID := ec.Status.ClusterID
	before := checkMembership(f, ec, 3)
	load := startLoad(f, name)
	obs := observeMembership(f, name)
	s := sampleRoll(f, name)

	two := resource.MustParse("2Gi")
	g := sampleGrowth(f, name, two)
	start := time.Now()
	patchSpec(f, name, func(s *etcdv1alpha2.EtcdClusterSpec) { s.Storage.Size = ptr.To(two) })
	if err := f.Poll("every PVC reports 2Gi", expansionTimeout, g.all(3)); err != nil {
		f.T.Fatal(err)
	}
	f.Record("pvc-expansion-total", since(start), "storage.size 1Gi → 2Gi on 3 PVC members (local-expandable): spec patched → every PVC's status.capacity 2Gi")

	ec = waitConverged(f, name, 3, rollTimeout)
	f.Record("pvc-expansion-converged", since(start), "storage.size 1Gi → 2Gi: spec patched → converged, every member on the 2Gi template and its 1Gi default quota")
	g.stop()
	// The quota roll, and nothing else, restarted the members: each once, one at a time.
	s.record(f, "pvc-expansion-roll", "default quota roll after PVC expansion")
	g.requireExpandedFirst(f)
	requireGrownMembers(f, name, two)
	requireRunningTemplate(f, name, func(p *corev1.Pod) error {
		for _, st := range p.Status.ContainerStatuses {
			if st.RestartCount > 0 {
				return fmt.Errorf("container %s restarted %d times since the quota roll", st.Name, st.RestartCount)
			}
		}
		if !slices.Contains(p.Spec.Containers[0].Args, "--quota-backend-bytes=1073741824") {
			return fmt.Errorf("does not run with the 1Gi default quota of a 2Gi volume: %v", p.Spec.Containers[0].Args)
		}
		return nil
	})
	if after := checkMembership(f, ec, 3); !maps.Equal(after, before) {
		f.T.Errorf("members %v, were %v: storage growth replaced a member", after, before)
	}
	obs.check(f, clusterID)
	requireHealed(f, name, 3, clusterID)
	load.verify(f, "PVC expansion 1Gi → 2Gi and quota roll on 3 PVC members")
	expanded, err := f.Kube.EventsV1().Events(f.Namespace).List(f.Ctx, metav1.ListOptions{FieldSelector: "reason=StorageExpanded"})
	if err != nil {
		f.T.Fatal(err)
	}
	if n := len(expanded.Items); n != 3 {
		f.T.Errorf("%d StorageExpanded Events, want one per PVC (3)", n)
	}
}

// growthSampler watches a growing cluster every 100 ms: when each member's PVC was first seen
// reporting the size, and whether a member's Pod was ever seen going (terminating or replaced)
// while its PVC did not report the size yet. Each sample lists the Pods first and the PVCs
// second: a Pod that goes only after its PVC grew is then always seen with its PVC grown, so the
// check has no false alarm from the order of two samplers.
type growthSampler struct {
	mu       sync.Mutex
	initial  map[string]types.UID // member → Pod UID before the change
	grownAt  map[string]time.Time // member → first seen with the size
	tooEarly []string
	stop     func()
}

func sampleGrowth(f *framework.Test, name string, size resource.Quantity) *growthSampler {
	f.T.Helper()
	g := &growthSampler{initial: f.PodUIDs(podSelector(name)), grownAt: map[string]time.Time{}}
	g.stop = sampleEvery(f, 100*time.Millisecond, func(ctx context.Context) {
		pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
		if err != nil {
			return
		}
		pvcs, err := f.Kube.CoreV1().PersistentVolumeClaims(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
		if err != nil {
			return
		}
		g.add(pods.Items, pvcs.Items, size, time.Now())
	})
	f.T.Cleanup(g.stop)
	return g
}

func (g *growthSampler) add(pods []corev1.Pod, pvcs []corev1.PersistentVolumeClaim, size resource.Quantity, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range pvcs {
		m := p.Labels[etcdv1alpha2.LabelComponent]
		if q := p.Status.Capacity[corev1.ResourceStorage]; q.Cmp(size) >= 0 && g.grownAt[m].IsZero() {
			g.grownAt[m] = now
		}
	}
	for _, p := range pods {
		going := p.UID != g.initial[p.Name] || p.DeletionTimestamp != nil
		if going && g.grownAt[p.Name].IsZero() && !slices.Contains(g.tooEarly, p.Name) {
			g.tooEarly = append(g.tooEarly, p.Name)
		}
	}
}

// all is a Poll condition: n PVCs grown.
func (g *growthSampler) all(n int) func(context.Context) (bool, string, error) {
	return func(context.Context) (bool, string, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.grownAt) == n, fmt.Sprintf("grown: %v", slices.Sorted(maps.Keys(g.grownAt))), nil
	}
}

// requireExpandedFirst checks that no member's Pod went before its own PVC reported the size:
// expand first, roll after.
func (g *growthSampler) requireExpandedFirst(f *framework.Test) {
	f.T.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.tooEarly) > 0 {
		f.T.Errorf("members %v were restarted before their PVC reported the new size: expand first, roll after", g.tooEarly)
	}
}

// requireGrownMembers checks that every member carries spec.storage.size size and its PVC no
// resize condition.
func requireGrownMembers(f *framework.Test, name string, size resource.Quantity) {
	f.T.Helper()
	ms, err := listMembers(f.Ctx, f, name)
	if err != nil {
		f.T.Fatal(err)
	}
	for _, m := range ms {
		if m.Spec.Storage.Size == nil || m.Spec.Storage.Size.Cmp(size) != 0 {
			f.T.Errorf("member %s has spec.storage.size %v, want %s", m.Name, m.Spec.Storage.Size, size.String())
		}
		pvc, err := f.Kube.CoreV1().PersistentVolumeClaims(f.Namespace).Get(f.Ctx, desired.PVCName(m.Name), metav1.GetOptions{})
		if err != nil {
			f.T.Fatal(err)
		}
		if len(pvc.Status.Conditions) > 0 {
			f.T.Errorf("PVC %s keeps resize conditions %v", pvc.Name, pvc.Status.Conditions)
		}
	}
}
