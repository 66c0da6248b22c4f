package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/etcdaccess"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// Event reasons of the auth actions (docs/design/conditions-and-events.md). No Event, log line
// or status field ever carries the password.
const (
	eventAuthEnabled         = "AuthEnabled"
	eventRootPasswordChanged = "RootPasswordChanged"
)

// enableAuth creates root with the Secret's password, grants it the root role and enables etcd
// auth (every step idempotent), then latches status.authEnabled in this pass's status patch. A
// pass that dies between AuthEnable and the patch finds auth on and latches it
// (KindLatchAuth).
func (x *executor) enableAuth(ctx context.Context, _ membership.Action) (step.Result, error) {
	cli, err := x.etcd()
	if err != nil {
		return step.Result{}, err
	}
	password, err := etcdaccess.Password(ctx, x.apiReader, x.obs.cluster)
	if err != nil {
		return step.Requeue(membership.AccessRetry, "the credentials Secret is unusable"), nil
	}
	if err := cli.EnableRootAuth(ctx, password); err != nil {
		return x.waitingOn("EnableRootAuth", fmt.Errorf("enabling etcd authentication: %w", err),
			membership.MembershipPoll, etcdclient.ErrNoLeader, etcdclient.ErrTimeout)
	}
	x.effects.authEnabled = true
	x.event(corev1.EventTypeNormal, eventAuthEnabled, fmt.Sprintf("created user root with the password of Secret %s and enabled etcd authentication; the operator now authenticates as root",
		etcdaccess.PasswordSecretName(x.obs.cluster)))
	return step.Continue, nil
}

// latchAuth records auth that etcd reports on in status.authEnabled.
func (x *executor) latchAuth(context.Context, membership.Action) (step.Result, error) {
	x.effects.authEnabled = true
	return step.Continue, nil
}

// changePassword sets root's password to the Secret's through the session authenticated with
// the previous one; the next pass dials with the new one and replaces the pooled session.
func (x *executor) changePassword(ctx context.Context, _ membership.Action) (step.Result, error) {
	prev := x.obs.access.previous
	if prev == nil {
		return step.Requeue(membership.AccessRetry, "no session with the previous password"), nil
	}
	password, err := etcdaccess.Password(ctx, x.apiReader, x.obs.cluster)
	if err != nil {
		return step.Requeue(membership.AccessRetry, "the credentials Secret is unusable"), nil
	}
	if err := prev.ChangeRootPassword(ctx, password); err != nil {
		return x.waitingOn("ChangeRootPassword", fmt.Errorf("changing root's password: %w", err),
			membership.MembershipPoll, etcdclient.ErrNoLeader, etcdclient.ErrTimeout, etcdclient.ErrAuthFailed)
	}
	x.event(corev1.EventTypeNormal, eventRootPasswordChanged, fmt.Sprintf("set root's password to the one in Secret %s; the operator re-authenticates with it",
		etcdaccess.PasswordSecretName(x.obs.cluster)))
	return step.Continue, nil
}
