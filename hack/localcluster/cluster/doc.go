// Package cluster runs a real multi-node Kubernetes cluster on this machine as host processes,
// for the project's e2e tests and demo: one etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kube-proxy (iptables) and CoreDNS, and per node its own containerd, kubelet,
// node address (on a bridge of its own) and Pod subnet. Binaries come from package pinned;
// images are built locally without a registry.
//
// Every address lives on bridges this package creates, blackhole routes keep cluster ranges
// from ever leaving through the host's uplink, and a guard rule drops Pod traffic towards the
// uplink. Host-side code dials IP addresses only and never resolves cluster names through the
// host's resolver, which points outside this machine.
//
// Test code drives faults through the same type the CLI uses:
//
//	c, err := cluster.New(cluster.Options{})
//	err = c.StopNode(ctx, "eo-node-1")  // kubelet, containers and containerd of one node
//	err = c.StartNode(ctx, "eo-node-1")
//	dir, err := c.PVCHostPath(ctx, "ns", "data-member-0") // host folder backing a PVC
//
// See docs/local-cluster.md for the layout, commands and timings.
package cluster
