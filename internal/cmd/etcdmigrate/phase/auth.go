package phase

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

// DisableAuth turns etcd auth off on a legacy cluster, as the legacy client certificate's user
// (root): the backup Job dials without a password, and the operator turns auth on again with
// root's new password once it takes over (docs/migration.md, "Phases"). Auth already off is
// done: a re-run writes nothing.
func DisableAuth(ctx context.Context, r client.Reader, d Dialer, c *legacy.EtcdCluster, pods []corev1.Pod) (changed bool, err error) {
	t, err := LegacyTarget(ctx, r, c, pods)
	if err != nil {
		return false, err
	}
	s, err := d.Dial(ctx, t)
	if err != nil {
		return false, err
	}
	defer func() { _ = s.Close() }()
	on, err := s.AuthEnabled(ctx)
	if err != nil || !on {
		return false, err
	}
	if err := s.AuthDisable(ctx); err != nil {
		return false, fmt.Errorf("turning auth off on %s/%s: %w", c.Namespace, c.Name, err)
	}
	return true, nil
}
