package translate

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// RootUser is the user the operator enables auth with.
const RootUser = "root"

// translateAuth maps enableAuth onto spec.auth with root's credentials from --auth-secret or
// a generated <c>-root-credentials. etcd-migrate turns auth off before its backup; the operator
// sets root's password and turns it on again once it has taken over (docs/migration.md,
// "Adoption steps"; docs/auth.md), hence the auth window.
func (t *translator) translateAuth() {
	c := t.in.Cluster
	etcdAuth := t.in.Etcd != nil && t.in.Etcd.AuthEnabled
	if !c.AuthEnabled() {
		if etcdAuth {
			t.refuse(RefusalAuthStateMismatch, "spec.security.enableAuth",
				"etcd has authentication on but the legacy spec does not enable it, so neither the backup nor this operator could talk to it",
				"set spec.security.enableAuth: true in the legacy spec (with server TLS), or turn auth off in etcd, then re-run")
		}
		return
	}
	if t.spec.TLS == nil || t.spec.TLS.Client == nil {
		t.refuse(RefusalAuthWithoutServerTLS, "spec.security.enableAuth",
			"auth is enabled but the client API has no TLS; this operator never sends a password over plain HTTP",
			"add serverSecret and serverTrustedCASecret to the legacy spec and let the legacy operator roll them out, or turn auth off, then re-run")
		return
	}
	name, ok := t.authSecretName()
	if !ok {
		return
	}
	t.spec.Auth = &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: name}}
	t.out.Security.AuthWindow = true
	t.warnSecurity(WarnAuthWindow, "spec.security.enableAuth",
		"auth is turned off before the backup and stays off until the operator, having taken over, sets root's password and turns it on again: in between any client that reaches the cluster acts as root",
		"keep clients of this cluster stopped or fenced off during the migration if that matters")
}

// authSecretName is --auth-secret's name, which must live in the cluster's namespace, or a
// generated Secret with a random password.
func (t *translator) authSecretName() (string, bool) {
	c := t.in.Cluster
	if s := t.in.Config.AuthSecret; s != "" {
		ns, name, found := strings.Cut(s, "/")
		if !found {
			return s, true
		}
		if ns != c.Namespace {
			t.refuse(RefusalAuthSecretNamespace, "--auth-secret",
				fmt.Sprintf("Secret %s is in namespace %s; the cluster can only reference Secrets in %s", s, ns, c.Namespace),
				"copy the Secret into "+c.Namespace+" and pass --auth-secret "+c.Namespace+"/"+name)
			return "", false
		}
		return name, true
	}
	name := c.Name + "-root-credentials"
	t.out.Secrets = append(t.out.Secrets, GeneratedSecret{
		Name: name, Type: corev1.SecretTypeBasicAuth, Purpose: "root's password, which the operator sets in etcd",
		Keys: []SecretKey{{Key: corev1.BasicAuthUsernameKey, Value: RootUser}, {Key: corev1.BasicAuthPasswordKey, Random: true}},
	})
	return name, true
}
