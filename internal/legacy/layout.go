package legacy

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// DefaultReplicas is the CRD default of spec.replicas.
const DefaultReplicas int32 = 3

// DefaultImage is the etcd image the legacy operator renders unless podTemplate overrides the
// etcd container's image.
const DefaultImage = "quay.io/coreos/etcd:v3.5.12"

// DefaultStorageSize is what the legacy webhook puts into an empty volume claim template.
var DefaultStorageSize = resource.MustParse("4Gi")

// Labels of every legacy Pod, Service and PDB, and the StatefulSet's selector. Their keys and
// values happen to equal three of this project's own cluster labels, which is why Services of
// either operator select the other's Pods during the cut-over.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"

	NameEtcd      = "etcd"
	ManagedByEtcd = "etcd-operator"
)

// Selector is the legacy StatefulSet's selector and the Services' selector for cluster c.
func Selector(cluster string) map[string]string {
	return map[string]string{LabelName: NameEtcd, LabelInstance: cluster, LabelManagedBy: ManagedByEtcd}
}

// Object names of a legacy cluster.

// StatefulSetName is the StatefulSet of cluster c: c.
func StatefulSetName(cluster string) string { return cluster }

// PodName is the Pod of ordinal i: c-i.
func PodName(cluster string, ordinal int) string { return cluster + "-" + strconv.Itoa(ordinal) }

// ClaimTemplateName is the only volume claim template name etcd-migrate adopts.
const ClaimTemplateName = "data"

// PVCName is the StatefulSet PVC of a Pod: data-<pod>.
func PVCName(pod string) string { return ClaimTemplateName + "-" + pod }

// DefaultHeadlessServiceName is the headless Service unless headlessServiceTemplate names one.
func DefaultHeadlessServiceName(cluster string) string { return cluster + "-headless" }

// HeadlessServiceName is the headless Service a legacy cluster's members' DNS names live under.
func HeadlessServiceName(c *EtcdCluster) string {
	if t := c.Spec.HeadlessServiceTemplate; t != nil && t.Name != "" {
		return t.Name
	}
	return DefaultHeadlessServiceName(c.Name)
}

// ClientServiceName is the ClusterIP Service clients use: c unless serviceTemplate names one.
func ClientServiceName(c *EtcdCluster) string {
	if t := c.Spec.ServiceTemplate; t != nil && t.Name != "" {
		return t.Name
	}
	return c.Name
}

// StateConfigMapName is the ConfigMap the etcd container reads its bootstrap variables from.
func StateConfigMapName(cluster string) string { return cluster + "-cluster-state" }

// PDBName is the legacy PodDisruptionBudget: c.
func PDBName(cluster string) string { return cluster }

// ClusterToken is the --initial-cluster-token of a legacy cluster: <c>-<namespace>.
func ClusterToken(cluster, namespace string) string { return cluster + "-" + namespace }

// Keys of the state ConfigMap, read by etcd as its ETCD_* environment.
const (
	EnvInitialClusterState = "ETCD_INITIAL_CLUSTER_STATE"
	EnvInitialCluster      = "ETCD_INITIAL_CLUSTER"
	EnvInitialClusterToken = "ETCD_INITIAL_CLUSTER_TOKEN" //nolint:gosec // G101: an environment variable name; the token is a public cluster name
)

// Container layout of a legacy member.
const (
	ContainerName = "etcd"
	// DataVolumeName is the data volume (the claim template's name).
	DataVolumeName = "data"
	// DataMountPath is where the data volume is mounted.
	DataMountPath = "/var/run/etcd"
	// DataDirSubPath is the data directory below the mount: what becomes the adopted member's
	// data-dir-subpath annotation.
	DataDirSubPath = "default.etcd"
	// DataDir is --data-dir.
	DataDir = DataMountPath + "/" + DataDirSubPath

	EnvPodName      = "POD_NAME"
	EnvPodNamespace = "POD_NAMESPACE"

	ClientPort  int32 = 2379
	PeerPort    int32 = 2380
	MetricsPort int32 = 2381

	PeerCAMountPath     = "/etc/etcd/pki/peer/ca"
	PeerCertMountPath   = "/etc/etcd/pki/peer/cert"
	ServerCertMountPath = "/etc/etcd/pki/server/cert"
	ClientCAMountPath   = "/etc/etcd/pki/client/ca"

	// Probe paths, all on MetricsPort.
	StartupProbePath   = "/readyz?serializable=false"
	ReadinessProbePath = "/readyz"
	LivenessProbePath  = "/livez"
)

// Implicit tuning the legacy operator passes unless options override it.
const (
	DefaultAutoCompactionRetention = "5m"
	DefaultSnapshotCount           = "10000"
	// quotaPercent of the volume becomes --quota-backend-bytes unless options set it.
	quotaPercent = 95
)

// DefaultQuotaBackendBytes is the legacy implicit --quota-backend-bytes: 95 % of the volume,
// rounded down; 0 for an empty size (no flag).
func DefaultQuotaBackendBytes(size resource.Quantity) int64 {
	// Integer arithmetic, not the float the legacy operator used: the two agree below 2^53
	// bytes, and the live flag, not this value, is what a migration reads.
	return size.Value()/100*quotaPercent + size.Value()%100*quotaPercent/100
}

// Option keys of spec.options that have a typed field in this project's API (docs/migration.md,
// "Translation").
const (
	OptionQuotaBackendBytes       = "quota-backend-bytes"
	OptionAutoCompactionMode      = "auto-compaction-mode"
	OptionAutoCompactionRetention = "auto-compaction-retention"
	OptionSnapshotCount           = "snapshot-count"
)

// ParseFlags reads an etcd command line as etcd does: --name=value or --name alone (true), a
// repeated flag keeping its last value, anything that is not a flag ignored. Only the
// --name=value and bare --name spellings are read, which is all the legacy operator renders.
func ParseFlags(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			if name, ok = strings.CutPrefix(a, "-"); !ok {
				continue
			}
		}
		if name == "" {
			continue
		}
		if k, v, found := strings.Cut(name, "="); found {
			out[k] = v
			continue
		}
		out[name] = "true"
	}
	return out
}
