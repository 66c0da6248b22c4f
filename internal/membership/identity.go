package membership

import (
	"crypto/sha1" //nolint:gosec // G505: etcd derives cluster IDs with SHA-1; we reproduce it, not use it for security
	"encoding/binary"
	"net/url"
	"slices"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// Token is the --initial-cluster-token of a cluster: <namespace>-<name>-<uid>. The UID makes a
// new cluster of the same name a different etcd cluster, so that a member of the old one can
// never join it (etcd refuses a peer whose cluster ID differs).
func Token(namespace, name, uid string) string {
	return namespace + "-" + name + "-" + uid
}

// ClientURL is the client URL the operator dials a member at: its Pod IP, never DNS, so that the
// operator works from outside the cluster network's DNS (and tests run it on the host).
func ClientURL(podIP string, tls bool) string {
	scheme := "http"
	if tls {
		scheme = "https"
	}
	if strings.Contains(podIP, ":") {
		podIP = "[" + podIP + "]"
	}
	return scheme + "://" + podIP + ":2379"
}

// NameFromPeerURL is the member name encoded in a peer URL: the first DNS label of its host.
// etcd lists a member that has not started yet without a name, so --initial-cluster must take
// the name from the URL.
func NameFromPeerURL(peerURL string) string {
	u, err := url.Parse(peerURL)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	host := u.Hostname()
	if i := strings.IndexByte(host, '.'); i >= 0 {
		return host[:i]
	}
	return host
}

// InitialCluster builds --initial-cluster for a member joining a cluster whose member list is
// members: every member's first persisted peer URL verbatim (etcd compares them as strings
// during the join), named by etcd's name or, for a member that has not started, by the name in
// its URL; plus the joining member itself; sorted by name so that two passes produce the same
// string. A member listed twice (the joining member is already in etcd after a crash) appears
// once.
func InitialCluster(members []etcdclient.Member, self, selfPeerURL string) string {
	entries := map[string]string{self: selfPeerURL}
	for _, m := range members {
		if len(m.PeerURLs) == 0 {
			continue
		}
		name := m.Name
		if name == "" {
			name = NameFromPeerURL(m.PeerURLs[0])
		}
		if name == "" || name == self || slices.Contains(m.PeerURLs, selfPeerURL) {
			continue
		}
		entries[name] = m.PeerURLs[0]
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, n+"="+entries[n])
	}
	return strings.Join(parts, ",")
}

// SeedInitialCluster is the seed's --initial-cluster: itself only.
func SeedInitialCluster(name, peerURL string) string {
	return name + "=" + peerURL
}

// SeedClusterID is the cluster ID etcd derives when a cluster is bootstrapped with one initial
// member: the first 8 bytes, big-endian, of the SHA-1 of the sorted initial member IDs
// (RaftCluster.genID in go.etcd.io/etcd/server/v3/etcdserver/api/membership/cluster.go, the same
// in 3.5, 3.6 and 3.7). The operator bootstraps every cluster from exactly one seed, so the
// seed's member ID determines the cluster ID; the seed's identity in etcd's member list is what
// B4 checks before latching it.
func SeedClusterID(seedID uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seedID)
	sum := sha1.Sum(b[:]) //nolint:gosec // G401: reproduces etcd's derivation, not a security use
	return etcdclient.FormatID(binary.BigEndian.Uint64(sum[:8]))
}
