package framework

import "context"

// Faults that need the local cluster tool rather than the Kubernetes API. The tool owns the
// nodes' kubelets, container runtimes and host paths; the framework reaches them through these
// small interfaces (implemented in cluster_faults.go) so that tests do not depend on how the
// tool is built, and a test that needs one skips when Suite.Cluster does not provide it (see
// RequireNodeFaults and friends).

// NodeFaults stops and starts whole nodes.
type NodeFaults interface {
	// StopNode stops the node's kubelet and container runtime, with its containers, the way a
	// lost machine looks to Kubernetes: the node goes NotReady and its Pods stop answering.
	StopNode(ctx context.Context, node string) error
	// StartNode starts a stopped node again.
	StartNode(ctx context.Context, node string) error
}

// ContainerFaults kills containers behind the kubelet's back.
type ContainerFaults interface {
	// KillContainer sends SIGKILL to a container's processes through the runtime, the way a
	// crash or an OOM kill looks; the kubelet then restarts it per the Pod's restart policy.
	KillContainer(ctx context.Context, namespace, pod, container string) error
}

// DataDirFaults damages a member's persisted data on its node.
type DataDirFaults interface {
	// WipeDataDir deletes the contents of the volume mounted at mountPath in the Pod's
	// container, as a lost disk would.
	WipeDataDir(ctx context.Context, namespace, pod, mountPath string) error
	// CorruptDataDir overwrites bytes of the etcd database file under mountPath so that etcd
	// detects corruption on start or in its hash checks.
	CorruptDataDir(ctx context.Context, namespace, pod, mountPath string) error
	// RewriteDataDir overwrites, in place, every occurrence of old in the etcd database file
	// under mountPath with repl (of the same length) and reports how many it rewrote. A running
	// etcd maps the file shared and sees the new bytes at once: its keyspace diverges from its
	// peers' while it keeps serving, and no check of etcd's own notices until a restart or a
	// compaction.
	RewriteDataDir(ctx context.Context, namespace, pod, mountPath string, old, repl []byte) (int, error)
	// DamageDataDir calls damage with the folder, on this host, of the volume mounted at
	// mountPath, for damage of the test's own making.
	DamageDataDir(ctx context.Context, namespace, pod, mountPath string, damage func(dir string) error) error
}

// ClusterRecords are the cluster tool's records of what happens in the cluster, read from
// this host's files.
type ClusterRecords interface {
	// AuditLogFiles lists the API server's audit log (every write, at Metadata level; read
	// with ReadAuditEvents) and its rotated backups, oldest first.
	AuditLogFiles() ([]string, error)
	// CoreDNSLogPath is CoreDNS's log, one line per query (read with ReadCoreDNSQueries).
	CoreDNSLogPath() string
}

// Volumes reads what the cluster's volumes hold, from this host's files.
type Volumes interface {
	// PVCHostPath is the host folder that backs the bound PVC namespace/name.
	PVCHostPath(ctx context.Context, namespace, name string) (string, error)
}

// ClusterFaults is everything the cluster tool may offer; each part is optional.
type ClusterFaults struct {
	Nodes      NodeFaults
	Containers ContainerFaults
	DataDirs   DataDirFaults
	Records    ClusterRecords
	Volumes    Volumes
}
