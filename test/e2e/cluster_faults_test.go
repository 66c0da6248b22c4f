//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/traffic"
)

// TestFrameworkDataDirFaults exercises the cluster-tool faults on a single etcd Pod with a PVC:
// a killed container restarts; a corrupted db keeps etcd from starting; a wiped data dir lets
// it start again as a new, empty member.
func TestFrameworkDataDirFaults(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Disruptive)
	containers := f.RequireContainerFaults()
	dataDirs := f.RequireDataDirFaults()
	image, err := f.EtcdImage(f.Ctx, os.Getenv, "3.6")
	if err != nil {
		t.Skipf("no etcd image on the nodes: %v", err)
	}
	const dataDir = "/var/lib/etcd"
	createSingleEtcd(t, f, image, dataDir)
	if _, err := f.WaitForPodsReady(f.Ctx, f.Namespace, "app.kubernetes.io/name=e2e-etcd-single", 1, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	cli, _ := f.DialMembers("app.kubernetes.io/name=e2e-etcd-single", nil)
	put := func(ctx context.Context, v string) error {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err := cli.Put(pctx, "k", v)
		return err
	}
	if err := put(f.Ctx, "before"); err != nil {
		t.Fatalf("writing: %v", err)
	}
	// The data dir is fsynced on every commit, so the write is on the volume from here on.

	// A killed container is restarted by the kubelet and keeps its data.
	if err := containers.KillContainer(f.Ctx, f.Namespace, "etcd", "etcd"); err != nil {
		t.Fatal(err)
	}
	waitRestarts(t, f, "etcd", 1)
	if _, err := f.WaitForPodsReady(f.Ctx, f.Namespace, "app.kubernetes.io/name=e2e-etcd-single", 1, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if v := getK(t, f, cli); v != "before" {
		t.Fatalf("after a container kill k = %q, want before", v)
	}

	// A corrupted backend: etcd cannot open it at the next start.
	if err := dataDirs.CorruptDataDir(f.Ctx, f.Namespace, "etcd", dataDir); err != nil {
		t.Fatal(err)
	}
	if err := containers.KillContainer(f.Ctx, f.Namespace, "etcd", "etcd"); err != nil {
		t.Fatal(err)
	}
	waitRestarts(t, f, "etcd", 3) // the kill, then at least one failed start on the corrupt db
	// bbolt names the damage: "both meta pages are invalid ... invalid database". The failed
	// start is the current container while it crashes and the previous one once the kubelet
	// restarted it (older ones are garbage-collected), so look at both.
	if err := f.Poll("a failed start's log naming the corrupt db", time.Minute, func(ctx context.Context) (bool, string, error) {
		var seen []string
		for _, previous := range []bool{false, true} {
			logs, err := f.Kube.CoreV1().Pods(f.Namespace).GetLogs("etcd", &corev1.PodLogOptions{Container: "etcd", Previous: previous}).DoRaw(ctx)
			if err == nil && strings.Contains(string(logs), "invalid database") {
				return true, "", nil
			}
			seen = append(seen, tail(string(logs), 2))
		}
		return false, strings.Join(seen, " | "), nil
	}); err != nil {
		t.Fatal(err)
	}

	// A wiped data dir: the next start bootstraps a new, empty single-member cluster.
	if err := dataDirs.WipeDataDir(f.Ctx, f.Namespace, "etcd", dataDir); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WaitForPodsReady(f.Ctx, f.Namespace, "app.kubernetes.io/name=e2e-etcd-single", 1, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	// The Pod kept its IP (same sandbox), so the client reconnects.
	if v := getK(t, f, cli); v != "" {
		t.Fatalf("after a wipe k = %q, want no key", v)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// getK reads k with a linearizable get, retrying while the member restarts; "" means no key.
func getK(t *testing.T, f *framework.Test, cli *clientv3.Client) string {
	t.Helper()
	value := ""
	if err := f.Poll("a linearizable read of k", time.Minute, func(ctx context.Context) (bool, string, error) {
		gctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		resp, err := cli.Get(gctx, "k")
		if err != nil {
			return false, err.Error(), nil
		}
		value = ""
		if len(resp.Kvs) > 0 {
			value = string(resp.Kvs[0].Value)
		}
		return true, "", nil
	}); err != nil {
		t.Fatal(err)
	}
	return value
}

// waitRestarts waits until the Pod's first container restarted at least n times.
func waitRestarts(t *testing.T, f *framework.Test, pod string, n int32) {
	t.Helper()
	if err := f.Poll(fmt.Sprintf("%d restarts of %s", n, pod), 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		p, err := f.Kube.CoreV1().Pods(f.Namespace).Get(ctx, pod, metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, fmt.Sprintf("%v", err), nil
		}
		st := p.Status.ContainerStatuses[0]
		return st.RestartCount >= n, fmt.Sprintf("restarts %d, ready %t", st.RestartCount, st.Ready), nil
	}); err != nil {
		t.Fatal(err)
	}
}

// createSingleEtcd creates a one-member etcd Pod named etcd whose data dir is a PVC on the
// default StorageClass.
func createSingleEtcd(t *testing.T, f *framework.Test, image, dataDir string) {
	t.Helper()
	labels := map[string]string{"app.kubernetes.io/name": "e2e-etcd-single"}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data-etcd"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd", Labels: labels},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers: []corev1.Container{{
				Name:            "etcd",
				Image:           image,
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{"/usr/local/bin/etcd"},
				Args: []string{
					"--name=etcd",
					"--data-dir=" + dataDir + "/default.etcd",
					"--listen-client-urls=http://0.0.0.0:2379",
					"--advertise-client-urls=http://$(POD_IP):2379",
				},
				Env: []corev1.EnvVar{
					{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
				},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(2379)}},
					PeriodSeconds: 2,
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: dataDir}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name},
			}}},
		},
	}
	if _, err := f.Kube.CoreV1().PersistentVolumeClaims(f.Namespace).Create(f.Ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PVC: %v", err)
	}
	if _, err := f.Kube.CoreV1().Pods(f.Namespace).Create(f.Ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Pod: %v", err)
	}
}

// TestFrameworkNodeLoss stops the node of one member of a plain etcd StatefulSet under write
// traffic (kubelet and runtime with its containers, as a lost machine), waits until Kubernetes
// marks it NotReady, starts it again and requires the member back, a linearizable history, no
// acknowledged write missing and equal HashKV on all three members.
func TestFrameworkNodeLoss(t *testing.T) {
	// Not parallel: a stopped node disturbs every other test's Pods on it.
	f := framework.NewTest(t, framework.Disruptive)
	nodes := f.RequireNodeFaults()
	image, err := f.EtcdImage(f.Ctx, os.Getenv, "3.6")
	if err != nil {
		t.Skipf("no etcd image on the nodes: %v", err)
	}
	const selector = "app.kubernetes.io/name=e2e-etcd"
	createEtcdFixture(t, f, image)
	pods, err := f.WaitForPodsReady(f.Ctx, f.Namespace, selector, 3, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cli, endpoints := f.DialMembers(selector, nil)
	gen := traffic.New(traffic.Config{Endpoints: endpoints, MaxDuration: 5 * time.Minute})
	stopFollowing := f.FollowEndpoints(gen, selector, false)
	defer stopFollowing()
	trafficCtx, stop := context.WithCancel(f.Ctx)
	defer stop()
	done := make(chan struct{})
	var res *traffic.Result
	var runErr error
	go func() {
		defer close(done)
		res, runErr = gen.Run(trafficCtx)
	}()
	waitAcked(t, f, gen, 100)

	victim := pods[2]
	node := victim.Spec.NodeName
	started := false
	t.Cleanup(func() {
		if !started { // never leave a node stopped, whatever failed
			_ = nodes.StartNode(context.Background(), node)
		}
	})
	lost := time.Now()
	if err := nodes.StopNode(f.Ctx, node); err != nil {
		t.Fatalf("stopping node %s: %v", node, err)
	}
	if err := f.Poll("node "+node+" NotReady", 3*time.Minute, nodeCondition(f, node, false)); err != nil {
		t.Fatal(err)
	}
	f.Record("node-notready-after-stop", time.Since(lost), node)
	waitAcked(t, f, gen, gen.Stats().AckedPuts+100) // two of three members keep quorum
	if err := nodes.StartNode(f.Ctx, node); err != nil {
		t.Fatalf("starting node %s: %v", node, err)
	}
	started = true
	if err := f.Measure("member-back-after-node-start", func() error {
		_, err := f.WaitForPodsReady(f.Ctx, f.Namespace, selector, 3, 5*time.Minute)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	waitAcked(t, f, gen, gen.Stats().AckedPuts+100)
	stop()
	<-done
	if runErr != nil {
		t.Fatalf("traffic: %v", runErr)
	}
	f.VerifyTraffic(res, 300, "plain etcd StatefulSet, one node stopped and started")
	stopFollowing()
	members := gen.Endpoints()
	if len(members) != 3 {
		t.Fatalf("traffic ended on endpoints %v, want all 3 members back", members)
	}
	t.Log(f.RequireHashKVEqual(cli, members, 2*time.Minute))
}

// nodeCondition is a Poll condition for a node's Ready condition being ready.
func nodeCondition(f *framework.Test, node string, ready bool) framework.Condition {
	return func(ctx context.Context) (bool, string, error) {
		n, err := f.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return nodeReady(n) == ready, fmt.Sprintf("Ready=%t", nodeReady(n)), nil
	}
}
