//go:build e2e

package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/etcd-operator/etcd-operator/hack/localcluster/cluster"
)

// clusterFaults wires the local cluster tool (hack/localcluster/cluster) into the framework.
// Node stop/start are the tool's own operations; container kills and data-dir damage are built
// here on what the tool exposes (its state folder and PVCHostPath). When the tool cannot be
// loaded (a run against another cluster), every part stays nil and tests that need one skip.
func clusterFaults(kube kubernetes.Interface) ClusterFaults {
	c, err := cluster.New(cluster.Options{Log: io.Discard})
	if err != nil {
		return ClusterFaults{}
	}
	return ClusterFaults{
		Nodes:      c,
		Containers: &runtimeFaults{kube: kube, stateDir: c.StateDir()},
		DataDirs:   &volumeFaults{kube: kube, hostPath: c.PVCHostPath},
		Records:    c,
		Volumes:    c,
	}
}

// runtimeFaults kills containers through the node's own containerd, the way the kernel's OOM
// killer or a crash would end them: the kubelet sees the exit and applies the restart policy.
type runtimeFaults struct {
	kube     kubernetes.Interface
	stateDir string
}

// KillContainer implements ContainerFaults. Each node runs its own containerd; its socket lives
// at <state>/nodes/<node>/containerd.sock in the tool's layout.
func (r *runtimeFaults) KillContainer(ctx context.Context, namespace, pod, container string) error {
	p, err := r.kube.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("killing container %s of %s/%s: %w", container, namespace, pod, err)
	}
	id := ""
	for _, st := range p.Status.ContainerStatuses {
		if st.Name == container && st.State.Running != nil {
			id = strings.TrimPrefix(st.ContainerID, "containerd://")
		}
	}
	if id == "" || p.Spec.NodeName == "" {
		return fmt.Errorf("killing container %s of %s/%s: not running", container, namespace, pod)
	}
	sock := filepath.Join(r.stateDir, "nodes", p.Spec.NodeName, "containerd.sock")
	out, err := exec.CommandContext(ctx, "ctr", "--address", sock, "--namespace", "k8s.io",
		"tasks", "kill", "--all", "--signal", "SIGKILL", id).CombinedOutput()
	if err != nil {
		return fmt.Errorf("killing container %s of %s/%s (%s): %w: %s", container, namespace, pod, id, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// volumeFaults damages the host folder that backs a Pod's PVC. Every node shares the host's
// file system, so the folder is changed in place.
type volumeFaults struct {
	kube     kubernetes.Interface
	hostPath func(ctx context.Context, namespace, pvc string) (string, error)
}

// WipeDataDir implements DataDirFaults: it empties the volume mounted at mountPath.
func (v *volumeFaults) WipeDataDir(ctx context.Context, namespace, pod, mountPath string) error {
	dir, err := v.volumeDir(ctx, namespace, pod, mountPath)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("wiping %s: %w", dir, err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("wiping %s: %w", dir, err)
		}
	}
	return nil
}

// corruptBytes covers bbolt's two meta pages (4 KiB each on this platform): with both
// overwritten, etcd refuses to open the backend at its next start, a deterministic and
// classifiable corruption rather than one that may or may not be read.
const corruptBytes = 8192

// CorruptDataDir implements DataDirFaults: it overwrites the start of the first bbolt file
// named "db" (etcd's member/snap/db) under the volume mounted at mountPath. The running etcd
// keeps its open mapping; the damage shows at the member's next start.
func (v *volumeFaults) CorruptDataDir(ctx context.Context, namespace, pod, mountPath string) error {
	db, err := v.dbFile(ctx, namespace, pod, mountPath)
	if err != nil {
		return fmt.Errorf("corrupting %s/%s: %w", namespace, pod, err)
	}
	f, err := os.OpenFile(db, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("corrupting %s: %w", db, err)
	}
	garbage := make([]byte, corruptBytes)
	for i := range garbage {
		garbage[i] = 0xA5
	}
	_, err = f.WriteAt(garbage, 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("corrupting %s: %w", db, err)
	}
	return nil
}

// RewriteDataDir implements DataDirFaults.
func (v *volumeFaults) RewriteDataDir(ctx context.Context, namespace, pod, mountPath string, old, repl []byte) (int, error) {
	if len(old) != len(repl) || len(old) == 0 {
		return 0, fmt.Errorf("rewriting %s/%s: %q and %q differ in length", namespace, pod, old, repl)
	}
	db, err := v.dbFile(ctx, namespace, pod, mountPath)
	if err != nil {
		return 0, fmt.Errorf("rewriting %s/%s: %w", namespace, pod, err)
	}
	data, err := os.ReadFile(db)
	if err != nil {
		return 0, fmt.Errorf("rewriting %s: %w", db, err)
	}
	f, err := os.OpenFile(db, os.O_WRONLY, 0)
	if err != nil {
		return 0, fmt.Errorf("rewriting %s: %w", db, err)
	}
	n := 0
	for off := 0; ; {
		i := bytes.Index(data[off:], old)
		if i < 0 {
			break
		}
		if _, err = f.WriteAt(repl, int64(off+i)); err != nil {
			break
		}
		n++
		off += i + len(old)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("rewriting %s: %w", db, err)
	}
	return n, nil
}

// dbFile finds the first file named "db" (etcd's member/snap/db) under the volume the Pod
// mounts at mountPath.
func (v *volumeFaults) dbFile(ctx context.Context, namespace, pod, mountPath string) (string, error) {
	dir, err := v.volumeDir(ctx, namespace, pod, mountPath)
	if err != nil {
		return "", err
	}
	db := ""
	errFound := errors.New("found")
	walkErr := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "db" {
			db = path
			return errFound
		}
		return err
	})
	if walkErr != nil && !errors.Is(walkErr, errFound) {
		return "", fmt.Errorf("searching %s: %w", dir, walkErr)
	}
	if db == "" {
		return "", fmt.Errorf("no etcd db file under %s", dir)
	}
	return db, nil
}

// DamageDataDir implements DataDirFaults.
func (v *volumeFaults) DamageDataDir(ctx context.Context, namespace, pod, mountPath string, damage func(dir string) error) error {
	dir, err := v.volumeDir(ctx, namespace, pod, mountPath)
	if err != nil {
		return err
	}
	if err := damage(dir); err != nil {
		return fmt.Errorf("damaging %s/%s at %s: %w", namespace, pod, dir, err)
	}
	return nil
}

// volumeDir finds the host folder of the PVC that the Pod mounts at mountPath.
func (v *volumeFaults) volumeDir(ctx context.Context, namespace, pod, mountPath string) (string, error) {
	p, err := v.kube.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading Pod %s/%s: %w", namespace, pod, err)
	}
	claim, err := claimAt(p, mountPath)
	if err != nil {
		return "", err
	}
	return v.hostPath(ctx, namespace, claim)
}

func claimAt(p *corev1.Pod, mountPath string) (string, error) {
	volume := ""
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		for _, m := range c.VolumeMounts {
			if filepath.Clean(m.MountPath) == filepath.Clean(mountPath) {
				volume = m.Name
			}
		}
	}
	if volume == "" {
		return "", fmt.Errorf("pod %s/%s mounts nothing at %s", p.Namespace, p.Name, mountPath)
	}
	for _, vol := range p.Spec.Volumes {
		if vol.Name == volume && vol.PersistentVolumeClaim != nil {
			return vol.PersistentVolumeClaim.ClaimName, nil
		}
	}
	return "", fmt.Errorf("pod %s/%s: volume %s at %s is not a PVC (Memory members have no data dir to damage)", p.Namespace, p.Name, volume, mountPath)
}
