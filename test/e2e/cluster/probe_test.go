//go:build e2e

package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/etcd-operator/etcd-operator/hack/binaries/pinned"
	"github.com/etcd-operator/etcd-operator/hack/localcluster/cluster"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// Timeouts of the probe's waits. Pods start in about a second here; node loss is detected
// after the controller-manager's 20 s grace period.
const (
	upTimeout        = 15 * time.Minute // a cold up builds every binary
	podReadyTimeout  = 90 * time.Second
	clientPodTimeout = 60 * time.Second
	dnsTimeout       = 30 * time.Second
	nodeLossTimeout  = 90 * time.Second
	nodeBackTimeout  = 120 * time.Second
	pollEvery        = 500 * time.Millisecond
)

// envDisruptive enables the checks that take a node or the whole cluster away. They are off
// by default because `go test ./test/e2e/...` runs packages in parallel, and other packages'
// tests would lose their Pods; `make cluster-probe` sets it.
const envDisruptive = "E2E_CLUSTER_DISRUPTIVE"

func requireDisruptive(t *testing.T) {
	t.Helper()
	if os.Getenv(envDisruptive) != "1" {
		t.Skipf("takes a node or the cluster away from tests running in parallel; set %s=1 (make cluster-probe does)", envDisruptive)
	}
}

// probe is one run's view of the cluster.
type probe struct {
	c       *cluster.Cluster
	kube    kubernetes.Interface
	ns      string
	image   string
	members []string // Pod names, one per node, in node order
}

func newProbe(t *testing.T) *probe {
	t.Helper()
	c, err := cluster.New(cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), upTimeout)
	defer cancel()
	start := time.Now()
	if err := c.Up(ctx); err != nil {
		t.Fatalf("cluster up: %v", err)
	}
	t.Logf("cluster up (idempotent) took %s; kubeconfig %s", time.Since(start).Round(time.Millisecond), c.Kubeconfig())
	kube, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	root, err := pinned.FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	versions, err := pinned.LoadVersions(root)
	if err != nil {
		t.Fatal(err)
	}
	p := &probe{c: c, kube: kube, image: cluster.EtcdImage(versions.EnvtestEtcd)}
	p.ns = fmt.Sprintf("probe-%d", time.Now().UnixNano()%1_000_000)
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			p.dump(t)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = kube.CoreV1().Namespaces().Delete(ctx, p.ns, metav1.DeleteOptions{})
	})
	return p
}

// TestProbe runs the checks in order on one set of Pods: an etcd server per node, each on its
// own PVC, behind a headless Service (per-Pod DNS), a ClusterIP Service and a PDB.
func TestProbe(t *testing.T) {
	p := newProbe(t)
	nodes := p.c.Nodes()
	if len(nodes) < 3 {
		t.Fatalf("want at least 3 nodes, the cluster has %d", len(nodes))
	}
	p.createServicesAndPDB(t)
	for _, n := range nodes {
		p.createMember(t, n)
	}
	t.Run("a Pod runs on every node", p.podPerNode)
	t.Run("Pod to Pod across nodes", p.podToPod)
	t.Run("Pod to Service", p.podToService)
	t.Run("per-Pod DNS through a headless Service", p.perPodDNS)
	t.Run("PVC bound on the Pod's node and its host folder holds the data", p.pvcBound)
	t.Run("eviction refused by the PDB", p.evictionRefused)
	t.Run("a stopped node goes NotReady and recovers", p.nodeLoss)
}

func (p *probe) podPerNode(t *testing.T) {
	nodes := p.c.Nodes()
	for i, name := range p.members {
		pod := p.waitPodReady(t, name)
		if pod.Spec.NodeName != nodes[i].Name {
			t.Errorf("Pod %s runs on %s, want %s", name, pod.Spec.NodeName, nodes[i].Name)
		}
		if !strings.HasPrefix(pod.Status.PodIP, strings.TrimSuffix(nodes[i].PodSubnet, "0/24")) {
			t.Errorf("Pod %s has IP %s, want one in %s", name, pod.Status.PodIP, nodes[i].PodSubnet)
		}
	}
}

func (p *probe) podToPod(t *testing.T) {
	var endpoints []string
	for _, name := range p.members {
		endpoints = append(endpoints, "http://"+p.pod(t, name).Status.PodIP+":2379")
	}
	p.runClient(t, "pod-to-pod", p.c.Nodes()[0], "--endpoints="+strings.Join(endpoints, ","), "endpoint", "health")
}

func (p *probe) podToService(t *testing.T) {
	svc, err := p.kube.CoreV1().Services(p.ns).Get(t.Context(), "probe-client", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.runClient(t, "pod-to-service", p.c.Nodes()[1], "--endpoints=http://"+svc.Spec.ClusterIP+":2379", "put", "probe", "ok")
}

func (p *probe) perPodDNS(t *testing.T) {
	ctx := t.Context()
	// From the host, asking CoreDNS directly (never the host's resolver).
	for _, name := range p.members {
		fqdn := fmt.Sprintf("%s.probe.%s.svc.%s", name, p.ns, cluster.DNSDomain)
		want := p.pod(t, name).Status.PodIP
		err := wait.Poll(ctx, pollEvery, dnsTimeout, "DNS "+fqdn, func() (bool, error) {
			addrs, err := p.c.LookupHost(ctx, fqdn)
			return err == nil && len(addrs) == 1 && addrs[0] == want, err
		})
		if err != nil {
			t.Error(err)
		}
	}
	// CoreDNS has no upstream: any other name is NXDOMAIN, answered locally.
	var dnsErr *net.DNSError
	if addrs, err := p.c.LookupHost(ctx, "etcd.io"); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Errorf("lookup of etcd.io through CoreDNS = %v, %v; want NXDOMAIN", addrs, err)
	}
	// From a Pod, through its resolv.conf (the kubelet points it at CoreDNS).
	var endpoints []string
	for _, name := range p.members {
		endpoints = append(endpoints, fmt.Sprintf("http://%s.probe.%s.svc.%s:2379", name, p.ns, cluster.DNSDomain))
	}
	p.runClient(t, "pod-dns", p.c.Nodes()[2], "--endpoints="+strings.Join(endpoints, ","), "endpoint", "health")
}

func (p *probe) pvcBound(t *testing.T) {
	ctx := t.Context()
	nodes := p.c.Nodes()
	for i, name := range p.members {
		claim := "data-" + name
		pvc, err := p.kube.CoreV1().PersistentVolumeClaims(p.ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pvc.Status.Phase != corev1.ClaimBound {
			t.Fatalf("PVC %s is %s, want Bound", claim, pvc.Status.Phase)
		}
		if !strings.HasPrefix(pvc.Spec.VolumeName, nodes[i].Name+"-") {
			t.Errorf("PVC %s is bound to %s, want a PV of %s", claim, pvc.Spec.VolumeName, nodes[i].Name)
		}
		dir, err := p.c.PVCHostPath(ctx, p.ns, claim)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "data", "member", "snap")); err != nil {
			t.Errorf("PVC %s host folder %s does not hold etcd's data: %v", claim, dir, err)
		}
	}
}

func (p *probe) evictionRefused(t *testing.T) {
	ctx := t.Context()
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.members[0], Namespace: p.ns}}
	var err error
	// The disruption controller must first observe the Pods and compute the budget; until
	// then evictions are refused for another reason, so wait for the 429 itself.
	pollErr := wait.Poll(ctx, pollEvery, 30*time.Second, "the PDB to refuse an eviction", func() (bool, error) {
		err = p.kube.PolicyV1().Evictions(p.ns).Evict(ctx, eviction)
		if err == nil {
			return false, errors.New("eviction of " + p.members[0] + " was allowed, want it refused")
		}
		return apierrors.IsTooManyRequests(err), nil
	})
	if pollErr != nil {
		t.Fatalf("%v (last eviction error: %v)", pollErr, err)
	}
	t.Logf("eviction refused as expected: %v", err)
}

func (p *probe) nodeLoss(t *testing.T) {
	requireDisruptive(t)
	ctx := t.Context()
	nodes := p.c.Nodes()
	victim := nodes[len(nodes)-1]
	start := time.Now()
	if err := p.c.StopNode(ctx, victim.Name); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = p.c.StartNode(context.Background(), victim.Name)
		}
	})
	if err := p.waitNodeReady(ctx, victim.Name, false, nodeLossTimeout); err != nil {
		t.Fatal(err)
	}
	t.Logf("node %s NotReady %s after stop", victim.Name, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if err := p.c.StartNode(ctx, victim.Name); err != nil {
		t.Fatal(err)
	}
	restarted = true
	if err := p.waitNodeReady(ctx, victim.Name, true, nodeBackTimeout); err != nil {
		t.Fatal(err)
	}
	t.Logf("node %s Ready %s after start", victim.Name, time.Since(start).Round(time.Millisecond))
	pod := p.waitPodReady(t, p.members[len(p.members)-1])
	t.Logf("Pod %s Ready again on %s after %s", pod.Name, pod.Spec.NodeName, time.Since(start).Round(time.Millisecond))
}

func (p *probe) createServicesAndPDB(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	labels := map[string]string{"app": "probe"}
	port := []corev1.ServicePort{{Name: "client", Port: 2379, TargetPort: intstr.FromInt32(2379)}}
	services := []*corev1.Service{
		// Headless, and publishing not-ready addresses like an etcd peer Service does.
		{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, Selector: labels, Ports: port, PublishNotReadyAddresses: true,
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "probe-client"}, Spec: corev1.ServiceSpec{Selector: labels, Ports: port}},
	}
	for _, svc := range services {
		if _, err := p.kube.CoreV1().Services(p.ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	minAvailable := intstr.FromInt32(int32(len(p.c.Nodes())))
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			Selector:     &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	if _, err := p.kube.PolicyV1().PodDisruptionBudgets(p.ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createMember creates an etcd server Pod pinned to node n, with its data on a PVC of the
// default StorageClass.
func (p *probe) createMember(t *testing.T, n cluster.Node) {
	t.Helper()
	ctx := t.Context()
	name := fmt.Sprintf("probe-%d", n.Index)
	claim := "data-" + name
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := p.kube.CoreV1().PersistentVolumeClaims(p.ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "probe"}},
		Spec: corev1.PodSpec{
			Hostname:     name,
			Subdomain:    "probe",
			NodeSelector: map[string]string{corev1.LabelHostname: n.Name},
			Containers: []corev1.Container{{
				Name:            "etcd",
				Image:           p.image,
				ImagePullPolicy: corev1.PullNever,
				Command: []string{"etcd",
					"--name=" + name,
					"--data-dir=/var/lib/etcd/data",
					"--listen-client-urls=http://0.0.0.0:2379",
					"--advertise-client-urls=http://" + name + ".probe:2379",
					"--listen-peer-urls=http://0.0.0.0:2380",
				},
				Ports:          []corev1.ContainerPort{{Name: "client", ContainerPort: 2379}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(2379)}}, PeriodSeconds: 1},
				VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
			}}},
		},
	}
	if _, err := p.kube.CoreV1().Pods(p.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.members = append(p.members, name)
}

// runClient runs etcdctl with args in a one-shot Pod on node n and fails t unless it exits 0.
// It retries with a fresh Pod, because DNS answers can lag Pod readiness by the negative-cache
// TTL.
func (p *probe) runClient(t *testing.T, name string, n cluster.Node, args ...string) {
	t.Helper()
	ctx := t.Context()
	deadline := time.Now().Add(clientPodTimeout)
	for attempt := 1; ; attempt++ {
		podName := fmt.Sprintf("%s-%d", name, attempt)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: podName},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				NodeSelector:  map[string]string{corev1.LabelHostname: n.Name},
				Containers: []corev1.Container{{
					Name:            "etcdctl",
					Image:           p.image,
					ImagePullPolicy: corev1.PullNever,
					Command:         append([]string{"etcdctl", "--dial-timeout=2s", "--command-timeout=3s"}, args...),
				}},
			},
		}
		if _, err := p.kube.CoreV1().Pods(p.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var phase corev1.PodPhase
		err := wait.Poll(ctx, pollEvery, clientPodTimeout, "client Pod "+podName+" to finish", func() (bool, error) {
			got, err := p.kube.CoreV1().Pods(p.ns).Get(ctx, podName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			phase = got.Status.Phase
			return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
		})
		logs, _ := p.kube.CoreV1().Pods(p.ns).GetLogs(podName, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err == nil && phase == corev1.PodSucceeded {
			t.Logf("%s on %s succeeded (attempt %d): %s", podName, n.Name, attempt, strings.TrimSpace(string(logs)))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcdctl %s on %s: phase %s, err %v, output:\n%s", strings.Join(args, " "), n.Name, phase, err, logs)
		}
		t.Logf("%s on %s: phase %s, retrying: %s", podName, n.Name, phase, strings.TrimSpace(string(logs)))
	}
}

func (p *probe) pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	pod, err := p.kube.CoreV1().Pods(p.ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

func (p *probe) waitPodReady(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.Poll(t.Context(), pollEvery, podReadyTimeout, "Pod "+name+" Ready", func() (bool, error) {
		var err error
		pod, err = p.kube.CoreV1().Pods(p.ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

func (p *probe) waitNodeReady(ctx context.Context, name string, ready bool, timeout time.Duration) error {
	want := corev1.ConditionFalse
	if ready {
		want = corev1.ConditionTrue
	}
	return wait.Poll(ctx, pollEvery, timeout, fmt.Sprintf("node %s Ready=%v", name, ready), func() (bool, error) {
		node, err := p.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				// A node whose kubelet stopped reporting goes Unknown, which is NotReady too.
				if !ready {
					return c.Status != corev1.ConditionTrue, nil
				}
				return c.Status == want, nil
			}
		}
		return false, nil
	})
}

// dump logs what a failed probe needs: the namespace's Pods and events.
func (p *probe) dump(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods, err := p.kube.CoreV1().Pods(p.ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, pod := range pods.Items {
			t.Logf("pod %s node=%s phase=%s ip=%s conditions=%v", pod.Name, pod.Spec.NodeName, pod.Status.Phase, pod.Status.PodIP, pod.Status.Conditions)
		}
	}
	events, err := p.kube.CoreV1().Events(p.ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, e := range events.Items {
			t.Logf("event %s %s/%s: %s %s", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	t.Logf("component logs: %s", p.c.LogDir())
}
