package cluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// pollInterval is how often waits re-check; components start in a few seconds.
const pollInterval = 200 * time.Millisecond

// Client returns a clientset for the cluster admin.
func (c *Cluster) Client() (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		return nil, fmt.Errorf("loading %s (is the cluster up?): %w", c.Kubeconfig(), err)
	}
	// The cluster's only heavy client moment is up creating its PVs; the defaults (5/10)
	// would make that take seconds.
	cfg.QPS, cfg.Burst = 200, 400
	return kubernetes.NewForConfig(cfg)
}

var httpClient = &http.Client{Timeout: 2 * time.Second}

func httpOK(url string) bool {
	resp, err := httpClient.Get(url)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (c *Cluster) waitEtcd(ctx context.Context, timeout time.Duration) error {
	url := fmt.Sprintf("http://%s:%d/health", ControlPlaneIP, etcdClientPort)
	return wait.Poll(ctx, pollInterval, timeout, "etcd at "+url+" (log: "+c.layout.logFile(etcdName)+")", func() (bool, error) {
		return httpOK(url), nil
	})
}

func (c *Cluster) waitAPIServer(ctx context.Context, timeout time.Duration) error {
	cs, err := c.Client()
	if err != nil {
		return err
	}
	return wait.Poll(ctx, pollInterval, timeout, "kube-apiserver /readyz (log: "+c.layout.logFile(apiServerName)+")", func() (bool, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", err
	})
}

// waitReady waits until every node is Ready and CoreDNS resolves the kubernetes Service.
func (c *Cluster) waitReady(ctx context.Context, timeout time.Duration) error {
	cs, err := c.Client()
	if err != nil {
		return err
	}
	if err := wait.Poll(ctx, pollInterval, timeout, fmt.Sprintf("%d Ready nodes (kubelet logs: %s/*-kubelet.log)", len(c.nodes), c.layout.logs()), func() (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return countReady(nodes.Items) == len(c.nodes), nil
	}); err != nil {
		return err
	}
	want := "kubernetes.default.svc." + DNSDomain
	return wait.Poll(ctx, pollInterval, timeout, "CoreDNS to resolve "+want+" (log: "+c.layout.logFile(coreDNSName)+")", func() (bool, error) {
		addrs, err := c.LookupHost(ctx, want)
		return err == nil && len(addrs) == 1 && addrs[0] == KubernetesServiceIP, err
	})
}

func countReady(nodes []corev1.Node) int {
	ready := 0
	for _, n := range nodes {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready
}

// Resolver returns a resolver that asks the cluster's CoreDNS directly. Host-side code must
// use it (or Pod IPs) for cluster names: the host's own resolver points outside this machine.
func Resolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, net.JoinHostPort(ControlPlaneIP, "53"))
		},
	}
}

// LookupHost resolves a cluster name (a fully qualified one: no search path applies) through
// the cluster's CoreDNS.
func (c *Cluster) LookupHost(ctx context.Context, name string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return Resolver().LookupHost(ctx, name+".")
}
