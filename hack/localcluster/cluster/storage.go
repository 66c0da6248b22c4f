package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// VolumesPerNode is how many local PVs up keeps available on each node in the default class.
// Released PVs are recycled only by the next up, so the pool must hold what one run of the full
// e2e set uses: with 40 per node it ran dry before the end (every PV Released, new members'
// Pods unschedulable), and a later full set used all 96 per node (288 Released at its end).
const VolumesPerNode = 160

// ExpandableVolumesPerNode is how many local PVs up keeps available on each node in
// ExpandableStorageClassName. As in the default class, Released PVs come back only with the
// next up: with 12 per node a full e2e set ran one node dry (the migration tests take up to 7
// each), and a snapshot Job's claim waited for a provisioner that does not exist.
const ExpandableVolumesPerNode = 48

// volumeCapacity is the nominal size of each local PV; local volumes do not enforce it, so
// it only has to be at least what tests request.
var volumeCapacity = resource.MustParse("10Gi")

// ExpandableVolumeCapacity is the nominal size of each PV of ExpandableStorageClassName. It is
// small on purpose: a claim bound to a PV reports the PV's capacity, so a claim of up to 1Gi
// reports 1Gi, and growing it beyond that needs the resizer, as on a real provisioner.
var ExpandableVolumeCapacity = resource.MustParse("1Gi")

// pool is one set of pre-created local PVs: per node, count PVs of one class and capacity.
type pool struct {
	prefix   string // PV name <node>-<prefix>-NN and folder <prefix>-NN
	class    string
	count    int
	capacity resource.Quantity
}

var pools = []pool{
	{prefix: "pv", class: StorageClassName, count: VolumesPerNode, capacity: volumeCapacity},
	{prefix: "xpv", class: ExpandableStorageClassName, count: ExpandableVolumesPerNode, capacity: ExpandableVolumeCapacity},
}

// volumeLabel marks the PVs up manages.
const volumeLabel = "etcd-operator.local/local-volume"

// ensureVolumes keeps each pool's local PVs on every node: VolumesPerNode in the default
// StorageClass, ExpandableVolumesPerNode in ExpandableStorageClassName. A PV
// released by its claim (Retain) is wiped and recreated, so every up returns used volumes to
// the pool; PVs in use or available are left alone.
func (c *Cluster) ensureVolumes(ctx context.Context, cs kubernetes.Interface) error {
	existing, err := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{LabelSelector: volumeLabel})
	if err != nil {
		return fmt.Errorf("listing local PVs: %w", err)
	}
	phase := map[string]corev1.PersistentVolumePhase{}
	for _, pv := range existing.Items {
		phase[pv.Name] = pv.Status.Phase
	}
	// One writer per node: a fresh cluster creates every PV, and sequential creates would
	// add seconds to each up.
	return c.forEachNode(func(n Node) error {
		for _, pl := range pools {
			for i := range pl.count {
				name := fmt.Sprintf("%s-%s-%02d", n.Name, pl.prefix, i)
				dir := filepath.Join(c.layout.volumes(n), fmt.Sprintf("%s-%02d", pl.prefix, i))
				p, exists := phase[name]
				if exists && p != corev1.VolumeReleased && p != corev1.VolumeFailed {
					continue
				}
				if err := c.recreateVolume(ctx, cs, n, pl, name, dir, exists); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// recreateVolume deletes PV name if it exists, empties dir and creates the PV again.
func (c *Cluster) recreateVolume(ctx context.Context, cs kubernetes.Interface, n Node, pl pool, name, dir string, exists bool) error {
	if exists {
		if err := cs.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("recycling PV %s: %w", name, err)
		}
		// The kubernetes.io/pv-protection finalizer is removed by kube-controller-manager,
		// which up starts only after the volumes: after a crash (processes killed, the
		// cluster's etcd kept) a Released PV would wait for it forever. Only Released and
		// Failed PVs get here, and no claim uses those, so there is nothing to protect.
		if _, err := cs.CoreV1().PersistentVolumes().Patch(ctx, name, types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("releasing PV %s from its finalizers: %w", name, err)
		}
		if err := waitGone(ctx, cs, name); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	// Non-root Pods (the restricted profile) must be able to write the volume; MkdirAll's
	// mode is filtered by the umask.
	if err := os.Chmod(dir, 0o777); err != nil {
		return err
	}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, localPV(name, dir, n, pl), metav1.CreateOptions{}); ignoreExists(err) != nil {
		return fmt.Errorf("creating PV %s: %w", name, err)
	}
	return nil
}

func waitGone(ctx context.Context, cs kubernetes.Interface, pv string) error {
	return wait.Poll(ctx, pollInterval, 30*time.Second, "PV "+pv+" to be deleted", func() (bool, error) {
		_, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

func localPV(name, dir string, n Node, pl pool) *corev1.PersistentVolume {
	fs := corev1.PersistentVolumeFilesystem
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{volumeLabel: "true"}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pl.capacity.DeepCopy()},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              pl.class,
			VolumeMode:                    &fs,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				Local: &corev1.LocalVolumeSource{Path: dir},
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{n.Name},
				}}}},
			}},
		},
	}
}

// PVCHostPath returns the host folder that backs the bound PVC namespace/name, for faults that
// wipe or corrupt a member's data. Every node shares this host's file system, so the folder
// can be changed directly (stop the Pod first if it must not see a half-written state).
func (c *Cluster) PVCHostPath(ctx context.Context, namespace, name string) (string, error) {
	cs, err := c.Client()
	if err != nil {
		return "", err
	}
	pvc, err := cs.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("getting PVC %s/%s: %w", namespace, name, err)
	}
	if pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("PVC %s/%s is not bound yet (phase %s)", namespace, name, pvc.Status.Phase)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("getting PV %s of PVC %s/%s: %w", pvc.Spec.VolumeName, namespace, name, err)
	}
	switch {
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path, nil
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path, nil
	}
	return "", fmt.Errorf("PV %s of PVC %s/%s is neither local nor hostPath", pv.Name, namespace, name)
}
