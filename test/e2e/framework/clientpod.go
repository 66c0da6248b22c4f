//go:build e2e

package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/hack/localcluster/cluster"
)

const (
	// clientPodTimeout bounds creating the client Pod until its container runs.
	clientPodTimeout = 2 * time.Minute
	// clientDialTimeout, clientKeepAlive and clientKeepAliveTimeout are package etcdconn's
	// settings: a silently dead connection is noticed within seconds.
	clientDialTimeout      = 5 * time.Second
	clientKeepAlive        = 5 * time.Second
	clientKeepAliveTimeout = 2 * time.Second
)

// ClientPod is a Pod whose network namespace the test's clients use: every connection they
// open, DNS queries included, leaves from the Pod's address, resolves through the cluster's DNS
// server named in the Pod's resolv.conf and reaches Services through the node's Service rules,
// as an application running in that Pod would (docs/testing-e2e.md, "In-cluster clients").
// Only the client code runs on the host, which is what keeps its history, acknowledged writes
// and timings in the test process. The Pod runs the pause image, which every node has.
type ClientPod struct {
	// Name and IP are the Pod's.
	Name, IP string
	pid      int
	dns      string
}

// StartClientPod creates the Pod name in the test namespace, waits until its container runs
// and finds its process and DNS server. The Pod goes with the namespace.
func (f *Test) StartClientPod(name string) *ClientPod {
	f.T.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace, Labels: map[string]string{"e2e.etcd-operator.io/client": name}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "client", Image: cluster.PauseImage, ImagePullPolicy: corev1.PullNever,
				SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(65532)),
					AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
		},
	}
	if _, err := f.Kube.CoreV1().Pods(f.Namespace).Create(f.Ctx, pod, metav1.CreateOptions{}); err != nil {
		f.T.Fatalf("creating client Pod %s: %v", name, err)
	}
	p := &ClientPod{Name: name}
	var containerID string
	err := f.Poll("client Pod "+name+" running", clientPodTimeout, func(ctx context.Context) (bool, string, error) {
		got, err := f.Kube.CoreV1().Pods(f.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, st := range got.Status.ContainerStatuses {
			if st.State.Running != nil && got.Status.PodIP != "" {
				p.IP, containerID = got.Status.PodIP, strings.TrimPrefix(st.ContainerID, "containerd://")
				return true, "", nil
			}
		}
		return false, "phase " + string(got.Status.Phase), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	if p.pid, err = HostProc.ContainerProcess(containerID); err != nil {
		f.T.Fatalf("finding the process of client Pod %s: %v", name, err)
	}
	if p.dns, err = nameserver(p.pid); err != nil {
		f.T.Fatal(err)
	}
	f.T.Logf("client Pod %s: IP %s, DNS server %s", name, p.IP, p.dns)
	return p
}

// nameserver is the first nameserver of the resolv.conf the kubelet wrote for the process's
// Pod, as host:53.
func nameserver(pid int) (string, error) {
	path := fmt.Sprintf("/proc/%d/root/etc/resolv.conf", pid)
	content, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(content), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "nameserver" {
			if ip, err := netip.ParseAddr(f[1]); err == nil {
				return netip.AddrPortFrom(ip, 53).String(), nil
			}
		}
	}
	return "", fmt.Errorf("%s names no nameserver:\n%s", path, content)
}

// ServiceName is the fully qualified DNS name of Service svc in namespace ns.
func ServiceName(svc, ns string) string {
	return svc + "." + ns + ".svc." + cluster.DNSDomain
}

// LookupHost resolves name (fully qualified) through the Pod's DNS server, from the Pod.
func (p *ClientPod) LookupHost(ctx context.Context, name string) ([]string, error) {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return DialInNetNS(ctx, p.pid, network, p.dns)
	}}
	// Rooted, so that the host's search list never applies.
	return r.LookupHost(ctx, strings.TrimSuffix(name, ".")+".")
}

// DialContext connects to addr (host:port; a name is resolved as LookupHost does) from the
// Pod, trying each address in turn.
func (p *ClientPod) DialContext(ctx context.Context, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips := []string{host}
	if net.ParseIP(host) == nil {
		if ips, err = p.LookupHost(ctx, host); err != nil {
			return nil, err
		}
	}
	var last error
	for _, ip := range ips {
		conn, err := DialInNetNS(ctx, p.pid, "tcp", net.JoinHostPort(ip, port))
		if err == nil {
			return conn, nil
		}
		last = err
	}
	return nil, fmt.Errorf("dialing %s from Pod %s: %w", addr, p.Name, last)
}

// EtcdClient dials etcd at endpoints (URLs whose hosts may be cluster DNS names) from the Pod.
// Every reconnection resolves the name again, as a client in a Pod does when a Service
// changes. The caller closes the client.
func (p *ClientPod) EtcdClient(ctx context.Context, endpoints []string, tlsConfig *tls.Config) (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints: endpoints, TLS: tlsConfig,
		DialTimeout: clientDialTimeout, DialKeepAliveTime: clientKeepAlive, DialKeepAliveTimeout: clientKeepAliveTimeout,
		PermitWithoutStream: true, Context: ctx, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(p.DialContext)},
	})
	if err != nil {
		return nil, fmt.Errorf("dialing etcd %v from Pod %s: %w", endpoints, p.Name, err)
	}
	return c, nil
}
