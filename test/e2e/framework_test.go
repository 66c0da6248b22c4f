//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/traffic"
)

// These tests exercise the framework itself against the real cluster, independently of the
// operator: they are what shows the harness works before any operator scenario relies on it.

// TestFrameworkBasics checks the per-test namespace, node readiness and that a dump of a live
// namespace writes the expected files.
func TestFrameworkBasics(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)

	ns, err := f.Kube.CoreV1().Namespaces().Get(f.Ctx, f.Namespace, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the test namespace: %v", err)
	}
	if ns.Labels["e2e.etcd-operator.io/test"] != framework.ArtifactLabel(t.Name()) {
		t.Errorf("namespace labels = %v, want the test's name", ns.Labels)
	}

	err = f.Poll("every node Ready", time.Minute, func(ctx context.Context) (bool, string, error) {
		nodes, err := f.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		var notReady []string
		for _, n := range nodes.Items {
			if !nodeReady(&n) {
				notReady = append(notReady, n.Name)
			}
		}
		return len(nodes.Items) > 0 && len(notReady) == 0, fmt.Sprintf("%d nodes, not Ready: %v", len(nodes.Items), notReady), nil
	})
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	if err := f.DumpNamespace(f.Ctx, f.Namespace, dir, true); err != nil {
		t.Fatalf("dumping: %v", err)
	}
	for _, name := range []string{"events.yaml", "events.txt", "pods.yaml", "services.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("dump lacks %s: %v", name, err)
		}
	}
}

// TestFrameworkEtcdUnderPodFaults runs a plain 3-member etcd StatefulSet (no operator), drives
// write traffic at its Pod IPs, deletes one Pod, shows that the Eviction API refuses a second
// disruption under a PodDisruptionBudget, and verifies the history, missing writes and HashKV.
func TestFrameworkEtcdUnderPodFaults(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke, framework.Disruptive)
	image, err := f.EtcdImage(f.Ctx, os.Getenv, "3.6")
	if errors.Is(err, framework.ErrNoImage) {
		t.Skipf("no etcd image on the nodes: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}

	const selector = "app.kubernetes.io/name=e2e-etcd"
	createEtcdFixture(t, f, image)
	var pods []corev1.Pod
	if err := f.Measure("etcd-statefulset-3-ready", func() error {
		pods, err = f.WaitForPodsReady(f.Ctx, f.Namespace, selector, 3, 3*time.Minute)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	cli, endpoints := f.DialMembers(selector, nil)
	if len(endpoints) != 3 {
		t.Fatalf("member endpoints %v, want 3", endpoints)
	}

	gen := traffic.New(traffic.Config{Endpoints: endpoints, MaxDuration: 3 * time.Minute})
	trafficCtx, stop := context.WithCancel(f.Ctx)
	defer stop()
	done := make(chan struct{})
	var res *traffic.Result
	var runErr error
	go func() {
		defer close(done)
		res, runErr = gen.Run(trafficCtx)
	}()
	// The member Pod deleted below comes back under a new IP (and never gets Ready): traffic
	// follows the Ready Pods, as it must in operator scenarios that replace members.
	stopFollowing := f.FollowEndpoints(gen, selector, false)
	defer stopFollowing()
	waitAcked(t, f, gen, 100)

	// Lose one member: its Pod comes back with an empty emptyDir and cannot rejoin, so the
	// cluster runs on two of three members from here on.
	victim := pods[2]
	if err := f.DeletePod(f.Ctx, f.Namespace, victim.Name, ptr.To[int64](0)); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitForPodGone(f.Ctx, f.Namespace, victim.Name, victim.UID, time.Minute); err != nil {
		t.Fatal(err)
	}
	// With one member down the budget (minAvailable 2) allows no disruption: the Eviction API
	// must refuse with 429 once the disruption controller has seen the loss.
	if err := f.Poll("PDB to allow no disruption", time.Minute, func(ctx context.Context) (bool, string, error) {
		pdb, err := f.Kube.PolicyV1().PodDisruptionBudgets(f.Namespace).Get(ctx, "etcd", metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return pdb.Status.DisruptionsAllowed == 0 && pdb.Status.ObservedGeneration == pdb.Generation,
			fmt.Sprintf("healthy %d, allowed %d", pdb.Status.CurrentHealthy, pdb.Status.DisruptionsAllowed), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.EvictPod(f.Ctx, f.Namespace, pods[1].Name); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evicting a second member under the PDB: err = %v, want 429 TooManyRequests", err)
	}
	waitAcked(t, f, gen, gen.Stats().AckedPuts+100)
	stop()
	<-done
	if runErr != nil {
		t.Fatalf("traffic: %v", runErr)
	}
	f.VerifyTraffic(res, 200, "plain etcd StatefulSet, one Pod deleted")
	// Compare the two surviving members, the Ready Pods traffic followed.
	stopFollowing()
	survivors := gen.Endpoints()
	if len(survivors) != 2 {
		t.Fatalf("traffic ended on endpoints %v, want the 2 surviving members", survivors)
	}
	rep := f.RequireHashKVEqual(cli, survivors, time.Minute)
	t.Log(rep)
}

// TestFrameworkOperatorStopStart scales the operator to 0 and back and records how long it takes
// to become available again.
func TestFrameworkOperatorStopStart(t *testing.T) {
	// Not parallel: stopping the operator would disturb every other test's clusters.
	f := framework.NewTest(t, framework.Disruptive)
	if _, err := f.OperatorDeployment(f.Ctx); errors.Is(err, framework.ErrNoOperator) {
		t.Skip("the operator is not deployed (make deploy)")
	}
	restore := f.StopOperator()
	if err := f.Measure("operator-restart", restore); err != nil {
		t.Fatal(err)
	}
}

func waitAcked(t *testing.T, f *framework.Test, gen *traffic.Generator, n int64) {
	t.Helper()
	if err := f.Poll(fmt.Sprintf("%d acknowledged writes", n), 2*time.Minute, func(context.Context) (bool, string, error) {
		s := gen.Stats()
		return s.AckedPuts >= n, fmt.Sprintf("%+v", s), nil
	}); err != nil {
		t.Fatal(err)
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// createEtcdFixture creates a headless Service, a PDB (minAvailable 2) and a 3-member etcd
// StatefulSet whose members find each other by per-Pod DNS names inside the cluster and
// advertise their Pod IPs to clients, so the host-side test never needs DNS.
func createEtcdFixture(t *testing.T, f *framework.Test, image string) {
	t.Helper()
	labels := map[string]string{"app.kubernetes.io/name": "e2e-etcd"}
	peers := make([]string, 3)
	for i := range peers {
		peers[i] = fmt.Sprintf("etcd-%d=http://etcd-%d.etcd.%s.svc:2380", i, i, f.Namespace)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd", Labels: labels},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true, // peers must resolve each other before they are Ready
			Selector:                 labels,
			Ports: []corev1.ServicePort{
				{Name: "client", Port: 2379},
				{Name: "peer", Port: 2380},
			},
		},
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(2)),
			Selector:     &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd", Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](3),
			ServiceName:         "etcd",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](5),
					Containers: []corev1.Container{{
						Name:            "etcd",
						Image:           image,
						ImagePullPolicy: corev1.PullNever,
						// The image holds static binaries only (no shell); the kubelet expands
						// $(VAR) references from the container's env.
						Command: []string{"/usr/local/bin/etcd"},
						Args: []string{
							"--name=$(POD_NAME)",
							"--data-dir=/var/lib/etcd",
							"--listen-client-urls=http://0.0.0.0:2379",
							"--advertise-client-urls=http://$(POD_IP):2379",
							"--listen-peer-urls=http://0.0.0.0:2380",
							"--initial-advertise-peer-urls=http://$(POD_NAME).etcd." + f.Namespace + ".svc:2380",
							"--initial-cluster=" + strings.Join(peers, ","),
							"--initial-cluster-state=new",
							"--initial-cluster-token=" + f.Namespace,
						},
						Env: []corev1.EnvVar{
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
							{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
						},
						Ports: []corev1.ContainerPort{{Name: "client", ContainerPort: 2379}, {Name: "peer", ContainerPort: 2380}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(2379)}},
							PeriodSeconds: 2,
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}},
					}},
					Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
	ctx := f.Ctx
	if _, err := f.Kube.CoreV1().Services(f.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Service: %v", err)
	}
	if _, err := f.Kube.PolicyV1().PodDisruptionBudgets(f.Namespace).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PDB: %v", err)
	}
	if _, err := f.Kube.AppsV1().StatefulSets(f.Namespace).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating StatefulSet: %v", err)
	}
}
