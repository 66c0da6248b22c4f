package etcdaccess

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
)

// CADigests reads the CA bundles of the TLS Secrets a member with t mounts, for its template
// hash: a changed ca.crt rolls the members, because etcd reads its trusted CAs only at start
// (docs/tls.md, "Rotation"). It returns the name of the first missing Secret instead of an
// error: that is a wait, not a failure.
func CADigests(ctx context.Context, r client.Reader, namespace string, t *etcdv1alpha2.EtcdMemberTLS) (desired.CADigests, string, error) {
	var ca desired.CADigests
	if t == nil {
		return ca, "", nil
	}
	digest := func(ref *corev1.LocalObjectReference) (string, string, error) {
		if ref == nil {
			return "", "", nil
		}
		s, err := read(ctx, r, namespace, ref.Name)
		if errors.Is(err, ErrSecretMissing) {
			return "", ref.Name, nil
		}
		if err != nil {
			return "", "", err
		}
		return desired.CADigest(s.Data[CAKey]), "", nil
	}
	var missing string
	var err error
	if ca.Client, missing, err = digest(t.ClientServerSecretRef); err != nil || missing != "" {
		return ca, missing, err
	}
	ca.Peer, missing, err = digest(t.PeerSecretRef)
	return ca, missing, err
}
