package desired

import (
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// FlagInputs are the facts a member's etcd command line is rendered from. MemberFlagInputs fills
// them from an EtcdMember; they are a flat value so that the renderer can be fuzzed directly.
type FlagInputs struct {
	// Name is the member name: etcd's --name and the first label of its DNS name.
	Name string
	// Namespace is the member's namespace.
	Namespace string
	// Service is the headless Service the member's DNS name lives under (MemberServiceName).
	Service string
	// DataDirSubPath is the raw data-dir-subpath annotation; see DataDir.
	DataDirSubPath string
	// Version is the etcd version the member runs; it selects version-specific flag spellings.
	Version string
	// InitialCluster is --initial-cluster, written by the cluster controller.
	InitialCluster string
	// ClusterToken is --initial-cluster-token.
	ClusterToken string
	// State is --initial-cluster-state, from InitialClusterState.
	State ClusterState
	// StorageSize is the data directory's capacity; it sets the default backend quota.
	StorageSize resource.Quantity
	// Options are the typed etcd options.
	Options *etcdv1alpha2.EtcdOptions
	// TLS selects the TLS flags.
	TLS *etcdv1alpha2.EtcdMemberTLS
	// PeerIdentity is the host name a peer's certificate must cover to be accepted on the peer
	// port (--peer-cert-allowed-hostname); empty accepts any certificate the peer CA signed.
	PeerIdentity string
}

// MemberFlagInputs collects a member's FlagInputs. state comes from InitialClusterState.
func MemberFlagInputs(member *etcdv1alpha2.EtcdMember, state ClusterState) FlagInputs {
	return FlagInputs{
		Name:           member.Name,
		Namespace:      member.Namespace,
		Service:        MemberServiceName(member),
		DataDirSubPath: member.Annotations[etcdv1alpha2.AnnotationDataDirSubPath],
		Version:        member.Spec.Version,
		InitialCluster: member.Spec.InitialCluster,
		ClusterToken:   member.Spec.ClusterToken,
		State:          state,
		StorageSize:    StorageSize(member.Spec.Storage),
		Options:        member.Spec.Options,
		TLS:            member.Spec.TLS,
		PeerIdentity:   peerIdentity(member),
	}
}

// peerIdentity is the name every member's peer certificate covers through its wildcard SAN
// (docs/tls.md, "Names in the certificates"): requiring it on the peer port refuses any other
// certificate the peer CA signed, a client-only one included, since etcd checks neither the key
// usage nor the name of a peer's certificate otherwise. Members adopted from the legacy operator
// keep accepting what their peers present: their certificates were issued for another layout.
func peerIdentity(member *etcdv1alpha2.EtcdMember) string {
	if member.Annotations[etcdv1alpha2.AnnotationHeadlessServiceName] != "" {
		return ""
	}
	return MemberHost("peer", HeadlessServiceName(member.Spec.ClusterName), member.Namespace)
}

// maxDefaultQuota caps the default --quota-backend-bytes at etcd's own default of 2 GiB
// (https://etcd.io/docs/v3.6/dev-guide/limit/#storage-size-limit).
const maxDefaultQuota int64 = 2 << 30

// safePathComponent is what a data-dir-subpath may look like: one path component that cannot
// climb out of the volume (no "/", no leading "." so no ".."), as written by etcd-migrate for
// adopted members whose data lives one directory below the volume root.
var safePathComponent = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]*$`)

// maxPathComponent is the longest file name Linux file systems accept.
const maxPathComponent = 255

// DataDir is etcd's --data-dir: the data volume's mount point, or the single directory below it
// named by a valid data-dir-subpath annotation. An invalid subpath is ignored rather than
// sanitised: guessing at what a malformed value meant could point etcd at the wrong data.
func DataDir(subPath string) string {
	if subPath != "" && len(subPath) <= maxPathComponent && safePathComponent.MatchString(subPath) {
		return DataMountPath + "/" + subPath
	}
	return DataMountPath
}

// EffectiveQuotaBackendBytes is the --quota-backend-bytes a member runs with, and whether the flag
// is passed at all. An explicit positive value is used as is; an explicit 0 means etcd's own
// default (no flag). Unset means min(2 GiB, size/2): etcd's database can grow to the quota plus
// the WAL and snapshots, so on a small volume the NOSPACE alarm must fire long before the disk is
// full, which etcd cannot recover from without manual surgery.
func EffectiveQuotaBackendBytes(opts *etcdv1alpha2.EtcdOptions, size resource.Quantity) (int64, bool) {
	if opts != nil && opts.QuotaBackendBytes != nil {
		q := *opts.QuotaBackendBytes
		return q, q > 0
	}
	if size.Cmp(*resource.NewQuantity(2*maxDefaultQuota, resource.BinarySI)) >= 0 {
		return maxDefaultQuota, true
	}
	q := size.Value() / 2
	return q, q > 0
}

// QuotaBackendBytes is the backend quota a member runs with: EffectiveQuotaBackendBytes where
// the flag is passed, etcd's own default (2 GiB, docs/defrag.md, "The rule") where it is not.
func QuotaBackendBytes(opts *etcdv1alpha2.EtcdOptions, size resource.Quantity) int64 {
	if q, ok := EffectiveQuotaBackendBytes(opts, size); ok {
		return q
	}
	return maxDefaultQuota
}

// EtcdFlags renders a member's etcd command line (docs/design/pod-template.md), in a fixed order:
// identity, listeners and advertised URLs, bootstrap, tuning options, corruption checks, client
// TLS, peer TLS. The order never depends on map iteration, so equal inputs give byte-equal Pods.
//
// A flag whose value would be empty is left out instead of rendered as "--flag=": etcd would
// otherwise read it as an explicit empty setting. Every element has the form --name=value, so
// that no value can ever be read as a separate flag.
func EtcdFlags(in FlagInputs) []string {
	fl := flagList{}
	version := versionOrNewest(in.Version)

	clientProto, peerProto := clientScheme(in.TLS), peerScheme(in.TLS)
	host := MemberHost(in.Name, in.Service, in.Namespace)

	// Identity. --data-dir must be the same on every start: etcd identifies itself by what it
	// finds there.
	fl.add("name", in.Name)
	fl.add("data-dir", DataDir(in.DataDirSubPath))

	// Listeners bind all interfaces because Pod IPs change across restarts; what peers and
	// clients use are the advertised DNS names, which do not.
	fl.add("listen-peer-urls", peerProto+"://0.0.0.0:"+port(PeerPort))
	fl.add("listen-client-urls", clientProto+"://0.0.0.0:"+port(ClientPort))
	fl.add("advertise-client-urls", clientProto+"://"+host+":"+port(ClientPort))
	fl.add("initial-advertise-peer-urls", peerProto+"://"+host+":"+port(PeerPort))
	// The metrics listener is plain HTTP on its own port so that kubelet probes and Prometheus
	// never need client certificates; it serves no keys.
	fl.add("listen-metrics-urls", "http://0.0.0.0:"+port(MetricsPort))

	// Bootstrap. etcd ignores all three once the data directory holds a member, so they are
	// safe to keep on every restart.
	fl.add("initial-cluster", in.InitialCluster)
	fl.add("initial-cluster-token", in.ClusterToken)
	fl.add("initial-cluster-state", string(renderState(in.State)))

	addOptions(&fl, in.Options, in.StorageSize)
	addCorruptionChecks(&fl, version)
	addTLS(&fl, in.TLS, in.PeerIdentity)
	return fl.flags
}

// PeerURL is the peer URL a member advertises (--initial-advertise-peer-urls): the URL the
// cluster controller registers with MemberAddAsLearner and writes into --initial-cluster. etcd
// compares peer URLs as strings, so it must be built here and nowhere else.
func PeerURL(member *etcdv1alpha2.EtcdMember) string {
	return peerScheme(member.Spec.TLS) + "://" +
		MemberHost(member.Name, MemberServiceName(member), member.Namespace) + ":" + port(PeerPort)
}

// ClientURL is the client URL a member advertises (--advertise-client-urls).
func ClientURL(member *etcdv1alpha2.EtcdMember) string {
	return clientScheme(member.Spec.TLS) + "://" +
		MemberHost(member.Name, MemberServiceName(member), member.Namespace) + ":" + port(ClientPort)
}

// clientScheme is https when the client listener has a server certificate.
func clientScheme(tls *etcdv1alpha2.EtcdMemberTLS) string {
	if tls != nil && tls.ClientServerSecretRef != nil {
		return "https"
	}
	return "http"
}

// peerScheme is https when the peer listener has a certificate, its own or (legacy) an
// automatically generated one.
func peerScheme(tls *etcdv1alpha2.EtcdMemberTLS) string {
	if tls != nil && (tls.PeerSecretRef != nil || tls.PeerAutoTLS) {
		return "https"
	}
	return "http"
}

// renderState maps anything but ClusterStateNew to ClusterStateExisting (see ClusterStateExisting).
func renderState(s ClusterState) ClusterState {
	if s == ClusterStateNew {
		return ClusterStateNew
	}
	return ClusterStateExisting
}

// addOptions renders the typed options. See
// https://etcd.io/docs/v3.6/op-guide/maintenance/#auto-compaction for compaction and
// https://etcd.io/docs/v3.6/op-guide/configuration/ for the rest.
func addOptions(fl *flagList, opts *etcdv1alpha2.EtcdOptions, size resource.Quantity) {
	if q, ok := EffectiveQuotaBackendBytes(opts, size); ok {
		fl.add("quota-backend-bytes", strconv.FormatInt(q, 10))
	}
	if opts == nil {
		return
	}
	fl.add("auto-compaction-mode", string(opts.AutoCompactionMode))
	fl.add("auto-compaction-retention", opts.AutoCompactionRetention)
	if opts.SnapshotCount != nil && *opts.SnapshotCount > 0 {
		fl.add("snapshot-count", strconv.FormatInt(*opts.SnapshotCount, 10))
	}
}

// Corruption checks. The initial check makes a member compare its database hash with its peers
// before serving, so a member with a corrupted bbolt file refuses to start instead of serving
// wrong data; the compaction-hash check has the leader compare followers' hashes at every
// compaction. Both are off by default in etcd. See https://etcd.io/docs/v3.6/op-guide/data_corruption/.
const (
	// flagInitialCorruptCheck35 is the 3.4/3.5 spelling; 3.6 deprecated it and 3.7 removed it.
	flagInitialCorruptCheck35 = "experimental-initial-corrupt-check"
	// flagCompactHashCheck35 exists from 3.5.5; 3.6 deprecated it and 3.7 removed it.
	flagCompactHashCheck35 = "experimental-compact-hash-check-enabled"
	// featureGates36Plus is the 3.6+ spelling: server feature gates InitialCorruptCheck and
	// CompactHashCheck (server/features/etcd_features.go), both Alpha and default off.
	featureGates36Plus = "InitialCorruptCheck=true,CompactHashCheck=true"
)

func addCorruptionChecks(fl *flagList, v etcdVersion) {
	if v.atLeast(v3_6_0) {
		fl.add("feature-gates", featureGates36Plus)
		return
	}
	fl.add(flagInitialCorruptCheck35, "true")
	if v.atLeast(v3_5_5) {
		fl.add(flagCompactHashCheck35, "true")
	}
}

// addTLS renders the TLS flags (docs/design/pod-template.md, "The etcd command line"). Client TLS
// may or may not verify clients; peer TLS is always
// mutual, because an unauthenticated peer can join raft and read every key. Leaf certificates
// are re-read by etcd on every handshake, so rotating them needs no restart.
// See https://etcd.io/docs/v3.6/op-guide/security/.
func addTLS(fl *flagList, tls *etcdv1alpha2.EtcdMemberTLS, peerIdentity string) {
	if tls == nil {
		return
	}
	if tls.ClientServerSecretRef != nil {
		fl.add("cert-file", ClientTLSMountPath+"/"+tlsCertKey)
		fl.add("key-file", ClientTLSMountPath+"/"+tlsKeyKey)
		// Mutual TLS only makes sense on a TLS listener; clientMTLS without a server
		// certificate is ignored rather than rendered into a member that cannot start.
		if tls.ClientMTLS {
			fl.add("client-cert-auth", "true")
			fl.add("trusted-ca-file", ClientTLSMountPath+"/"+tlsCAKey)
		}
	}
	switch {
	case tls.PeerSecretRef != nil:
		fl.add("peer-cert-file", PeerTLSMountPath+"/"+tlsCertKey)
		fl.add("peer-key-file", PeerTLSMountPath+"/"+tlsKeyKey)
		fl.add("peer-trusted-ca-file", PeerTLSMountPath+"/"+tlsCAKey)
		fl.add("peer-client-cert-auth", "true")
		fl.add("peer-cert-allowed-hostname", peerIdentity)
	case tls.PeerAutoTLS:
		// Self-signed, unauthenticated but encrypted peer traffic: kept only so that clusters
		// adopted from the legacy operator keep talking to their not-yet-rolled peers.
		fl.add("peer-auto-tls", "true")
	}
}

// port renders a port number.
func port(p int32) string { return strconv.Itoa(int(p)) }

// flagList accumulates --name=value flags, skipping empty values.
type flagList struct {
	flags []string
}

func (f *flagList) add(name, value string) {
	if value == "" {
		return
	}
	f.flags = append(f.flags, "--"+name+"="+value)
}
