package membership

import (
	"fmt"
	"strings"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// ReasonFeatureNotSupported is the reason of the conditions of a cluster whose spec asks for a
// feature this operator does not implement yet (docs/design/membership-flows.md, "Features not
// supported yet").
const ReasonFeatureNotSupported = "FeatureNotSupported"

// Unsupported names the fields of spec that ask for what this operator does not do yet, each
// with what it would have done, in a fixed order. The API accepts them (the reference operator's
// manifests set them), but a member started without them would silently ignore them: a cluster
// meant for TLS clients would serve plaintext or never be reachable, a restore would boot an empty
// cluster under a new cluster ID. So nothing that starts etcd goes ahead while any is set.
func Unsupported(spec *etcdv1alpha2.EtcdClusterSpec) []string {
	var out []string
	if t := spec.TLS; t != nil && t.Peer != nil && t.Peer.CertManager != nil {
		out = append(out, "spec.tls.peer.certManager (peer certificates from cert-manager: the operator creates no Certificate yet; use spec.tls.peer.secretRef)")
	}
	if b := spec.Bootstrap; b != nil && b.Restore != nil {
		out = append(out, "spec.bootstrap.restore (restore from a snapshot: the seed would start empty under a new cluster ID)")
	}
	return out
}

// holdForUnsupported keeps a from starting etcd while the spec asks for a feature not supported
// yet. Steps that start no process (a removal, a promotion, a leadership move) go ahead, so a
// cluster that runs already keeps being looked after. No requeue of its own: the fields are
// immutable, and a new cluster without them is a new object, which its own watch event brings.
func holdForUnsupported(s *Scope, a Action) Action {
	if len(s.Unsupported) == 0 || !startsEtcd(a.Kind) {
		return a
	}
	return Action{Kind: KindNone, Member: a.Member, Reason: ReasonFeatureNotSupported, Message: unsupportedMessage(s)}
}

// unsupportedMessage is the message of the FeatureNotSupported conditions.
func unsupportedMessage(s *Scope) string {
	return fmt.Sprintf("not supported yet: %s; no member is started, so none runs without it. "+
		"Recreate the cluster without these fields (they are immutable) or wait for an operator release that supports them",
		strings.Join(s.Unsupported, "; "))
}
