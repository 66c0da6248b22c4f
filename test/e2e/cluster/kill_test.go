//go:build e2e

package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/etcd-operator/etcd-operator/hack/localcluster/cluster"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// TestUpAfterEveryProcessWasKilled is what CI meets: the session that left the cluster running
// ends and every process is killed, while the cluster's etcd data and folders stay. up must
// bring that back, including a PV released by a deleted claim, whose pv-protection finalizer
// only kube-controller-manager removes (and up starts it after the volumes).
func TestUpAfterEveryProcessWasKilled(t *testing.T) {
	requireDisruptive(t)
	c, err := cluster.New(cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), upTimeout)
	defer cancel()
	if err := c.Up(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	const pvName = "eo-node-0-pv-39"
	releaseVolume(ctx, t, c, cs, pvName)

	// Every process the cluster started runs a binary from, or names a file under, the cache.
	cache := filepath.Dir(filepath.Dir(c.LogDir()))
	if out, err := exec.CommandContext(ctx, "pkill", "-9", "-f", cache+"/").CombinedOutput(); err != nil {
		t.Fatalf("killing the cluster's processes: %v: %s", err, out)
	}

	start := time.Now()
	if err := c.Up(ctx); err != nil {
		t.Fatalf("up after every process was killed: %v", err)
	}
	t.Logf("up after a kill took %s", time.Since(start).Round(time.Millisecond))
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Status.Phase != corev1.VolumeAvailable && pv.Status.Phase != corev1.VolumePending {
		t.Errorf("PV %s is %s after up; want it recycled to Available", pvName, pv.Status.Phase)
	}
}

// releaseVolume binds a claim to pv by name, then deletes the claim, leaving the PV Released
// (the local PVs are Retain).
func releaseVolume(ctx context.Context, t *testing.T, c *cluster.Cluster, cs kubernetes.Interface, pv string) {
	t.Helper()
	created, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kill-test-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	ns := created.Name
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	class := cluster.StorageClassName
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "released", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			VolumeName:       pv,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a claim on %s: %v", pv, err)
	}
	waitPV(ctx, t, c, cs, pv, corev1.VolumeBound)
	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the claim: %v", err)
	}
	waitPV(ctx, t, c, cs, pv, corev1.VolumeReleased)
}

// pvPhaseTimeout bounds one PV phase change, which kube-controller-manager's volume binder
// makes within a second on a quiet machine. CI once waited more than a minute for Released
// right after an up on a cluster whose etcd kept a previous run's objects; the ceiling only a
// regression would cross is generous, and a timeout reports what the PV and the controller
// manager's log said.
const pvPhaseTimeout = 3 * time.Minute

func waitPV(ctx context.Context, t *testing.T, c *cluster.Cluster, cs kubernetes.Interface, pv string, phase corev1.PersistentVolumePhase) {
	t.Helper()
	start := time.Now()
	var last *corev1.PersistentVolume
	err := wait.Poll(ctx, pollEvery, pvPhaseTimeout, "PV "+pv+" to be "+string(phase), func() (bool, error) {
		got, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = got
		return got.Status.Phase == phase, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, describePV(c, last))
	}
	t.Logf("PV %s %s after %s", pv, phase, time.Since(start).Round(time.Millisecond))
}

// describePV says what a PV that did not change phase looked like, and what
// kube-controller-manager logged about it.
func describePV(c *cluster.Cluster, pv *corev1.PersistentVolume) string {
	if pv == nil {
		return "the PV was never read"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "PV %s: phase %s, message %q, finalizers %v", pv.Name, pv.Status.Phase, pv.Status.Message, pv.Finalizers)
	if ref := pv.Spec.ClaimRef; ref != nil {
		fmt.Fprintf(&b, ", claimRef %s/%s uid %s", ref.Namespace, ref.Name, ref.UID)
	}
	data, err := os.ReadFile(filepath.Join(c.LogDir(), "kube-controller-manager.log"))
	if err != nil {
		fmt.Fprintf(&b, "\nkube-controller-manager.log: %v", err)
		return b.String()
	}
	var lines []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.Contains(line, pv.Name) || strings.Contains(line, "kill-test-") {
			lines = append(lines, line)
		}
	}
	lines = lines[max(0, len(lines)-30):]
	fmt.Fprintf(&b, "\nkube-controller-manager.log, its last %d lines naming the PV or the test's namespace:\n%s", len(lines), strings.Join(lines, "\n"))
	return b.String()
}
