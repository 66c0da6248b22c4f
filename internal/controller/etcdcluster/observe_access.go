package etcdcluster

import (
	"context"
	"errors"
	"slices"

	logf "sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdaccess"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// accessProblem is what dialling etcd found wrong with the Secrets and credentials the spec
// names (docs/tls.md, docs/auth.md).
type accessProblem struct {
	// problem and reason describe an unusable Secret (membership.Access.Problem).
	problem, reason string
	// rejected says etcd rejected the Secret's password; previous is then the pooled session
	// of the password used before, nil when the operator holds none.
	rejected bool
	previous etcdAPI
	// authOn says etcd answered that auth is on before status latched it.
	authOn bool
	// authRequired says etcd has auth on while the spec asks for none (AuthRequiredNotConfigured).
	authRequired bool
}

// accessScope projects the access problems for the planner.
func (o *observation) accessScope() membership.Access {
	c := o.cluster
	return membership.Access{
		AuthWanted:       etcdaccess.PasswordSecretName(c) != "",
		AuthLatched:      c.Status.AuthEnabled,
		AuthObservedOn:   o.access.authOn,
		Problem:          o.access.problem,
		ProblemReason:    o.access.reason,
		PasswordRejected: o.access.rejected,
		PreviousSession:  o.access.previous != nil,

		AuthRequiredNotConfigured: o.access.authRequired,
	}
}

// observeCredentials reads root's password whenever auth is asked for, latched or not, so that
// an unusable credentials Secret is reported before the operator needs it (AuthSecretInvalid)
// rather than found only when auth is to be enabled.
func (r *Reconciler) observeCredentials(ctx context.Context, o *observation) error {
	if etcdaccess.PasswordSecretName(o.cluster) == "" {
		return nil
	}
	_, err := etcdaccess.Password(ctx, r.apiReader, o.cluster)
	var me *etcdaccess.MaterialError
	switch {
	case errors.As(err, &me):
		o.access.problem, o.access.reason = accessFailure(err)
	case err != nil:
		return err
	}
	return nil
}

// serverName is the name the operator verifies members' server certificates against: a
// member's DNS name, which the wildcard SAN every member's certificate carries covers (the
// endpoints are Pod IPs). Any member's name serves; the first keeps it stable.
func (o *observation) serverName() string {
	if len(o.members) == 0 {
		return desired.MemberHost(o.cluster.Name, desired.HeadlessServiceName(o.cluster.Name), o.cluster.Namespace)
	}
	m := &o.members[0]
	return desired.MemberHost(m.Name, desired.MemberServiceName(m), m.Namespace)
}

// dial returns the pooled client for the cluster at eps, with the TLS identity and credentials
// the spec names (etcdaccess.Config). A rejected password falls back to the session of the
// previous one, so that the pass can still observe etcd and set the new password; nil when
// there is no client to observe with.
func (r *Reconciler) dial(ctx context.Context, o *observation, eps []string) etcdAPI {
	log := logf.FromContext(ctx)
	cfg, err := etcdaccess.Config(ctx, r.apiReader, o.cluster, eps, o.serverName())
	if err != nil && o.issuing(err) {
		// A move to spec.tls.managed: the managed Secrets the operator dials with are issued
		// in this very pass, and the members still run on the user's Secrets, which the
		// session dialled with them reaches (docs/tls.md, "Moving to managed certificates").
		if prev, ok := r.etcd.Pooled(o.key().String()); ok {
			return prev
		}
	}
	if err != nil {
		o.access.problem, o.access.reason = accessFailure(err)
		log.V(1).Info("Cannot build the etcd client configuration", "reason", err.Error())
		return nil
	}
	cli, err := r.etcd.Get(ctx, o.key().String(), cfg)
	if err == nil && cfg.Password == "" && etcdaccess.PasswordSecretName(o.cluster) != "" {
		// Auth asked for, not latched: a pass that enabled it may have ended before its status
		// patch, or the cluster was adopted with auth on. etcd answers this without credentials.
		if on, aerr := cli.AuthEnabled(ctx); aerr == nil && on {
			o.access.authOn = true
			return r.dialAsRoot(ctx, o, cfg)
		}
	}
	if err == nil {
		r.probeUnaskedAuth(ctx, o, cli)
	}
	if errors.Is(err, etcdclient.ErrAuthFailed) && cfg.Password != "" {
		o.access.rejected = true
		if prev, ok := r.etcd.Pooled(o.key().String()); ok {
			o.access.previous = prev
			return prev
		}
	}
	if err != nil {
		log.V(1).Info("Cannot reach etcd", "reason", err.Error())
		return nil
	}
	return cli
}

// probeUnaskedAuth asks etcd whether auth is on (AuthStatus, answered without credentials on
// every supported version) for a cluster whose spec asks for none, but only when there is reason
// to suspect it: the cluster was restored from a snapshot (spec.bootstrap.restore; the snapshot
// carries the auth store of the cluster it was taken from), or etcd refused one of this
// cluster's calls for want of credentials since the last probe found auth off. etcd serves
// AuthStatus through raft, a proposal like a write: asked of every cluster on every pass, it
// would add a consensus round to each, for a state only a restore (or someone with etcdctl)
// produces. etcd 3.5.28 and later 3.5 releases, and the 3.6 releases this project builds, refuse
// MemberList itself without credentials once auth is on, so the pass that meets auth notes it
// then (noteAuthRefusal); older releases answer MemberList and refuse only membership changes,
// which the executor notes for the next pass to probe.
func (r *Reconciler) probeUnaskedAuth(ctx context.Context, o *observation, cli etcdAPI) {
	suspect := restored(o.cluster) || r.memory.authSuspected(o.key())
	if etcdaccess.PasswordSecretName(o.cluster) != "" || !suspect {
		return
	}
	on, err := cli.AuthEnabled(ctx)
	if err != nil {
		return // unknown: the suspicion stays, and the next pass asks again
	}
	o.access.authRequired = on
	r.memory.setAuthSuspected(o.key(), on)
}

// noteAuthRefusal records err when it is etcd refusing a call of a cluster whose spec asks for no
// auth because the call carried no credentials: etcd answers so only while auth is on
// (rpctypes.ErrUserEmpty), so this pass needs no probe to know. Reports whether it was such a
// refusal.
func (r *Reconciler) noteAuthRefusal(o *observation, err error) bool {
	if !errors.Is(err, etcdclient.ErrAuthRequired) || etcdaccess.PasswordSecretName(o.cluster) != "" {
		return false
	}
	o.access.authRequired = true
	r.memory.setAuthSuspected(o.key(), true)
	return true
}

// restored reports whether the cluster was restored from a snapshot.
func restored(c *etcdv1alpha2.EtcdCluster) bool {
	return c.Spec.Bootstrap != nil && c.Spec.Bootstrap.Restore != nil
}

// dialAsRoot re-dials with root's credentials once auth was found on before it was latched.
func (r *Reconciler) dialAsRoot(ctx context.Context, o *observation, cfg etcdclient.Config) etcdAPI {
	password, err := etcdaccess.Password(ctx, r.apiReader, o.cluster)
	if err != nil {
		o.access.problem, o.access.reason = accessFailure(err)
		return nil
	}
	cfg.Username, cfg.Password = etcdaccess.RootUser, password
	cli, err := r.etcd.Get(ctx, o.key().String(), cfg)
	if errors.Is(err, etcdclient.ErrAuthFailed) {
		o.access.rejected = true
		return nil
	}
	if err != nil {
		return nil
	}
	return cli
}

// accessFailure is the condition reason and message for an unusable Secret: AuthSecretInvalid
// for root's credentials, CertificateInvalid for the TLS Secrets.
func accessFailure(err error) (problem, reason string) {
	var me *etcdaccess.MaterialError
	if !errors.As(err, &me) {
		return "", ""
	}
	if me.Credentials {
		return me.Error(), membership.ReasonAuthSecretInvalid
	}
	return me.Error(), membership.ReasonCertificateInvalid
}

// issuing reports a missing Secret that the operator issues itself, under spec.tls.managed: no
// fault of anyone's, so not an access problem either.
func (o *observation) issuing(err error) bool {
	var me *etcdaccess.MaterialError
	return errors.As(err, &me) && errors.Is(err, etcdaccess.ErrSecretMissing) && slices.Contains(o.tls.Issuing, me.Secret)
}
