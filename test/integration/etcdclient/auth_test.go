package etcdclient_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
)

// TestRootAuthLifecycle drives the auth calls against a real etcd over mutual TLS (docs/auth.md):
// enabling is idempotent and takes over a root user that exists with another password (an
// adopted cluster), a wrong password is refused at dial with ErrAuthFailed, and a password change through the old session makes the new
// password the only one that works. No error text carries a password.
func TestRootAuthLifecycle(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c := etcdproc.StartForTest(ctx, t, etcdproc.Options{Size: 1, TLS: true})
	tlsCfg, err := c.PKI.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	digest := etcdclient.DigestTLSMaterial(c.PKI.CAPEM, c.PKI.ClientCertPEM, c.PKI.ClientKeyPEM)
	conn := func(user, password string) (*etcdclient.Conn, error) {
		cli, err := etcdclient.New(ctx, etcdclient.Config{Endpoints: c.Endpoints(), TLS: tlsCfg.Clone(), TLSDigest: digest, Username: user, Password: password})
		if err == nil {
			t.Cleanup(func() { _ = cli.Close() })
		}
		return cli, err
	}
	const adopted, first, second = "adopted-Pw-1", "first-Pw-2", "second-Pw-3"
	anon, err := conn("", "")
	if err != nil {
		t.Fatal(err)
	}
	if on, err := anon.AuthEnabled(ctx); err != nil || on {
		t.Fatalf("AuthEnabled on a new cluster = %v, %v; want false", on, err)
	}
	// A root user someone else created, with a password the operator does not know.
	raw, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), TLS: tlsCfg.Clone(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = raw.Close() }()
	if _, err := raw.UserAdd(ctx, "root", adopted); err != nil {
		t.Fatal(err)
	}
	// The second call is a pass repeated after a crash before its status patch. It succeeds
	// because etcd maps the client certificate's common name, root, to the user root.
	for range 2 {
		if err := anon.EnableRootAuth(ctx, first); err != nil {
			t.Fatalf("EnableRootAuth: %v", err)
		}
	}
	if on, err := anon.AuthEnabled(ctx); err != nil || !on {
		t.Fatalf("AuthEnabled after enabling = %v, %v; want true", on, err)
	}
	for _, bad := range []string{adopted, "wrong"} {
		_, err := conn("root", bad)
		if !errors.Is(err, etcdclient.ErrAuthFailed) || strings.Contains(err.Error(), bad) {
			t.Fatalf("dialling with a wrong password: %v, want ErrAuthFailed without the password", err)
		}
	}
	root, err := conn("root", first)
	if err != nil {
		t.Fatalf("dialling as root: %v", err)
	}
	if _, err := root.MemberList(ctx); err != nil {
		t.Fatalf("MemberList as root: %v", err)
	}
	if err := root.ChangeRootPassword(ctx, second); err != nil {
		t.Fatalf("ChangeRootPassword: %v", err)
	}
	if _, err := conn("root", first); !errors.Is(err, etcdclient.ErrAuthFailed) {
		t.Fatalf("the old password still works after the change: %v", err)
	}
	if cli, err := conn("root", second); err != nil {
		t.Fatalf("dialling with the new password: %v", err)
	} else if _, err := cli.MemberList(ctx); err != nil {
		t.Fatalf("MemberList with the new password: %v", err)
	}
}

// TestEnableRootAuthOverAPasswordlessRoot is the adopted legacy cluster whose root user has no
// password (created with NoPassword, authenticated only by a client certificate whose common
// name is root) and whose auth etcd-migrate turned off (docs/migration.md, AuthWindow):
// EnableRootAuth must leave root with the Secret's password. A password change keeps etcd's
// NoPassword option, and etcd then refuses every password login ("password was given for no
// password user"), which locked the operator out of the cluster it had just adopted (found by
// the migration e2e on the local cluster). root's other roles are kept.
func TestEnableRootAuthOverAPasswordlessRoot(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c := etcdproc.StartForTest(ctx, t, etcdproc.Options{Size: 1, TLS: true})
	tlsCfg, err := c.PKI.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	digest := etcdclient.DigestTLSMaterial(c.PKI.CAPEM, c.PKI.ClientCertPEM, c.PKI.ClientKeyPEM)
	conn := func(user, password string) (*etcdclient.Conn, error) {
		cli, err := etcdclient.New(ctx, etcdclient.Config{Endpoints: c.Endpoints(), TLS: tlsCfg.Clone(), TLSDigest: digest, Username: user, Password: password})
		if err == nil {
			t.Cleanup(func() { _ = cli.Close() })
		}
		return cli, err
	}
	raw, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), TLS: tlsCfg.Clone(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = raw.Close() }()
	// What the legacy cluster held: root without a password, with the root role and another.
	if _, err := raw.UserAddWithOptions(ctx, "root", "", &clientv3.UserAddOptions{NoPassword: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.RoleAdd(ctx, "reader"); err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"root", "reader"} {
		if _, err := raw.UserGrantRole(ctx, "root", role); err != nil {
			t.Fatal(err)
		}
	}
	anon, err := conn("", "")
	if err != nil {
		t.Fatal(err)
	}
	const chosen = "adopted-Pw-4"
	if err := anon.EnableRootAuth(ctx, chosen); err != nil {
		t.Fatalf("EnableRootAuth: %v", err)
	}
	root, err := conn("root", chosen)
	if err != nil {
		t.Fatalf("dialling as root with the Secret's password: %v", err)
	}
	if _, err := root.MemberList(ctx); err != nil {
		t.Fatalf("MemberList as root: %v", err)
	}
	got, err := raw.UserGet(ctx, "root")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got.Roles, "root") || !slices.Contains(got.Roles, "reader") {
		t.Errorf("root's roles after EnableRootAuth: %v, want root and reader kept", got.Roles)
	}
}
