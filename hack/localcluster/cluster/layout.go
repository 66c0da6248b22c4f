package cluster

import (
	"fmt"
	"path/filepath"
)

// Address plan. Every range is routed to bridges this package creates (or blackholed), so
// nothing in them is ever sent through the host's uplink.
const (
	// ControlPlaneIP carries kube-apiserver, its etcd, the controller-manager, the scheduler,
	// kube-proxy's health endpoints and CoreDNS, on bridge controlPlaneBridge.
	ControlPlaneIP = "10.200.0.1"
	// NodeCIDR holds the control-plane address and every node address.
	NodeCIDR = "10.200.0.0/16"
	// PodCIDR holds one /24 per node.
	PodCIDR = "10.244.0.0/16"
	// ServiceCIDR is the ClusterIP range.
	ServiceCIDR = "10.96.0.0/16"
	// KubernetesServiceIP is the first ClusterIP, taken by the default/kubernetes Service.
	KubernetesServiceIP = "10.96.0.1"
	// DNSDomain is the cluster domain that CoreDNS serves.
	DNSDomain = "cluster.local"
	// APIServerPort is kube-apiserver's secure port on ControlPlaneIP.
	APIServerPort = 6443

	controlPlaneBridge = "eo-cp"
	serviceBridge      = "eo-svc"
	etcdClientPort     = 2379
	etcdPeerPort       = 2380
	coreDNSReadyPort   = 8181
	coreDNSHealthPort  = 8080
	kubeProxyHealthz   = 10256
	kubeletPort        = 10250
	kubeletHealthzPort = 10248
	// bridgePrefix marks every link this package owns, so down finds them all.
	bridgePrefix = "eo-"
)

// Node is one node of the local cluster.
type Node struct {
	// Name is the Kubernetes node name, such as eo-node-0.
	Name string
	// Index numbers nodes from 0.
	Index int
	// IP is the node's InternalIP, held by Bridge.
	IP string
	// Bridge is the empty bridge that holds IP.
	Bridge string
	// PodSubnet is the node's Pod range; CNIBridge holds its gateway.
	PodSubnet string
	// PodGateway is the first address of PodSubnet, on CNIBridge.
	PodGateway string
	// CNIBridge is the bridge the CNI plugin attaches this node's Pods to.
	CNIBridge string
	// Zone is the node's topology.kubernetes.io/zone label, one zone per node.
	Zone string
}

func newNode(i int) Node {
	return Node{
		Name:       fmt.Sprintf("eo-node-%d", i),
		Index:      i,
		IP:         fmt.Sprintf("10.200.0.%d", 11+i),
		Bridge:     fmt.Sprintf("%snode%d", bridgePrefix, i),
		PodSubnet:  fmt.Sprintf("10.244.%d.0/24", i),
		PodGateway: fmt.Sprintf("10.244.%d.1", i),
		CNIBridge:  fmt.Sprintf("%scni%d", bridgePrefix, i),
		Zone:       fmt.Sprintf("zone-%d", i),
	}
}

// layout names every folder the cluster uses under root ($ETCD_OPERATOR_CACHE/localcluster).
type layout struct {
	root string
}

// Persisted across down/up: image archives, and each node's containerd content (imported
// images), which makes a warm up fast.
func (l layout) images() string               { return filepath.Join(l.root, "images") }
func (l layout) containerdRoot(n Node) string { return filepath.Join(l.root, "containerd", n.Name) }
func (l layout) importStamp(n Node) string {
	return filepath.Join(l.containerdRoot(n), "imported-images")
}
func (l layout) resizerBinary() string           { return filepath.Join(l.root, "bin", "local-resizer") }
func (l layout) kubeconfig() string              { return filepath.Join(l.root, "kubeconfig") }
func (l layout) logs() string                    { return filepath.Join(l.root, "logs") }
func (l layout) logFile(component string) string { return filepath.Join(l.logs(), component+".log") }

// Everything under state() belongs to one cluster lifetime and is deleted by down.
func (l layout) state() string                   { return filepath.Join(l.root, "state") }
func (l layout) pki() string                     { return filepath.Join(l.state(), "pki") }
func (l layout) run() string                     { return filepath.Join(l.state(), "run") }
func (l layout) pidFile(component string) string { return filepath.Join(l.run(), component+".pid") }
func (l layout) recipeFile(component string) string {
	return filepath.Join(l.run(), component+".recipe")
}
func (l layout) etcdData() string          { return filepath.Join(l.state(), "etcd") }
func (l layout) config(name string) string { return filepath.Join(l.state(), "config", name) }
func (l layout) kubeProxyBinary() string   { return l.config("kube-proxy-binary") }
func (l layout) auditPolicy() string       { return l.config("audit-policy.yaml") }
func (l layout) audit() string             { return filepath.Join(l.state(), "audit") }
func (l layout) auditLog() string          { return filepath.Join(l.audit(), "audit.log") }
func (l layout) node(n Node) string        { return filepath.Join(l.state(), "nodes", n.Name) }
func (l layout) volumes(n Node) string     { return filepath.Join(l.state(), "volumes", n.Name) }
func (l layout) sysctlsSaved() string      { return filepath.Join(l.root, "sysctls.saved") }

func (l layout) containerdState(n Node) string  { return filepath.Join(l.node(n), "containerd-state") }
func (l layout) containerdSocket(n Node) string { return filepath.Join(l.node(n), "containerd.sock") }
func (l layout) kubeletRoot(n Node) string      { return filepath.Join(l.node(n), "kubelet") }

// component names double as pid and log file names.
func containerdComponent(n Node) string { return n.Name + "-containerd" }
func kubeletComponent(n Node) string    { return n.Name + "-kubelet" }
