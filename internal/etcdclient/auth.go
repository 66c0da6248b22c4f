package etcdclient

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// rootUser and rootRole are etcd's built-in superuser and its role: the only user the operator
// manages (docs/auth.md).
const (
	rootUser = "root"
	rootRole = "root"
)

// AuthEnabled implements Client. etcd answers AuthStatus without credentials on every supported
// version; an "auth required" refusal still means auth is on, so it is read as true.
func (c *Conn) AuthEnabled(ctx context.Context) (bool, error) {
	if err := c.closedErr("AuthStatus"); err != nil {
		return false, err
	}
	ctx, cancel := clusterCtx(ctx, ReadTimeout)
	defer cancel()
	resp, err := c.cli.AuthStatus(ctx)
	if err != nil {
		if errors.Is(Classify(err), ErrAuthRequired) {
			return true, nil
		}
		return false, c.fail("AuthStatus", err)
	}
	return resp.Enabled, nil
}

// EnableRootAuth implements Client: UserAdd, or, when root exists already (an adopted cluster's
// root password is not known to be the Secret's), resetRootPassword; UserGrantRole (granting a
// role held already succeeds), AuthEnable.
func (c *Conn) EnableRootAuth(ctx context.Context, password string) error {
	if err := c.closedErr("EnableRootAuth"); err != nil {
		return err
	}
	ctx, cancel := clusterCtx(ctx, MembershipTimeout)
	defer cancel()
	if _, err := c.cli.UserAdd(ctx, rootUser, password); err != nil {
		if !errors.Is(err, rpctypes.ErrUserAlreadyExist) && rpctypes.ErrorDesc(err) != rpctypes.ErrorDesc(rpctypes.ErrGRPCUserAlreadyExist) {
			return c.fail("UserAdd", err)
		}
		if err := c.resetRootPassword(ctx, password); err != nil {
			return err
		}
	}
	if _, err := c.cli.UserGrantRole(ctx, rootUser, rootRole); err != nil {
		return c.fail("UserGrantRole", err)
	}
	if _, err := c.cli.AuthEnable(ctx); err != nil {
		return c.fail("AuthEnable", err)
	}
	return nil
}

// resetRootPassword gives an existing root the password. A legacy cluster's root may have been
// created without one (NoPassword: its client certificate, common name root, logs it in), and a
// password change keeps that option, after which etcd refuses every password login as root
// (docs/migration.md, AuthWindow). So while auth is off, root is recreated with the password and
// its roles; once auth is on (a pass repeated after a crash, when the earlier pass recreated
// root already; etcd refuses to delete root then) only the password is changed. A crash between
// the delete and the add leaves no root: the next pass adds it with the root role only.
func (c *Conn) resetRootPassword(ctx context.Context, password string) error {
	status, err := c.cli.AuthStatus(ctx)
	if err != nil {
		return c.fail("AuthStatus", err)
	}
	if status.Enabled {
		if _, err := c.cli.UserChangePassword(ctx, rootUser, password); err != nil {
			return c.fail("UserChangePassword", err)
		}
		return nil
	}
	user, err := c.cli.UserGet(ctx, rootUser)
	if err != nil {
		return c.fail("UserGet", err)
	}
	if _, err := c.cli.UserDelete(ctx, rootUser); err != nil {
		return c.fail("UserDelete", err)
	}
	if _, err := c.cli.UserAdd(ctx, rootUser, password); err != nil {
		return c.fail("UserAdd", err)
	}
	for _, role := range user.Roles {
		if _, err := c.cli.UserGrantRole(ctx, rootUser, role); err != nil {
			return c.fail("UserGrantRole", err)
		}
	}
	return nil
}

// ChangeRootPassword implements Client. The client must be authenticated as root.
func (c *Conn) ChangeRootPassword(ctx context.Context, password string) error {
	if err := c.closedErr("UserChangePassword"); err != nil {
		return err
	}
	ctx, cancel := clusterCtx(ctx, MembershipTimeout)
	defer cancel()
	if _, err := c.cli.UserChangePassword(ctx, rootUser, password); err != nil {
		return c.fail("UserChangePassword", err)
	}
	return nil
}

// AuthDisable turns etcd authentication off. It is not part of Client: the operator never turns
// auth off; etcd-migrate does, before backing a legacy cluster up (docs/migration.md, "Phases").
// The client must act as root, by password or by a client certificate whose CN is root.
func (c *Conn) AuthDisable(ctx context.Context) error {
	if err := c.closedErr("AuthDisable"); err != nil {
		return err
	}
	ctx, cancel := clusterCtx(ctx, MembershipTimeout)
	defer cancel()
	if _, err := c.cli.AuthDisable(ctx); err != nil {
		return c.fail("AuthDisable", err)
	}
	return nil
}
