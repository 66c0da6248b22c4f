package etcdfake

import (
	"context"
	"fmt"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// AuthEnabled implements etcdclient.Client.
func (r *Recorder) AuthEnabled(context.Context) (bool, error) {
	if err := r.call(AuthEnabled, ""); err != nil {
		return false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Auth, nil
}

// EnableRootAuth implements etcdclient.Client. The password is never recorded.
func (r *Recorder) EnableRootAuth(context.Context, string) error {
	if err := r.call(EnableRootAuth, ""); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Auth = true
	return nil
}

// ChangeRootPassword implements etcdclient.Client. The password is never recorded.
func (r *Recorder) ChangeRootPassword(context.Context, string) error {
	return r.call(ChangeRootPassword, "")
}

// AuthEnabled implements etcdclient.Client.
func (c *Cluster) AuthEnabled(context.Context) (bool, error) {
	c.record(AuthEnabled, "")
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader == 0 {
		return false, fail(AuthEnabled, etcdclient.ErrNoLeader)
	}
	return c.authOn, nil
}

// EnableRootAuth implements etcdclient.Client: it needs a leader, like every write.
func (c *Cluster) EnableRootAuth(_ context.Context, password string) error {
	c.record(EnableRootAuth, "")
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader == 0 {
		return fail(EnableRootAuth, etcdclient.ErrNoLeader)
	}
	c.authOn, c.rootPassword = true, password
	return nil
}

// ChangeRootPassword implements etcdclient.Client.
func (c *Cluster) ChangeRootPassword(_ context.Context, password string) error {
	c.record(ChangeRootPassword, "")
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader == 0 {
		return fail(ChangeRootPassword, etcdclient.ErrNoLeader)
	}
	if !c.authOn {
		return fmt.Errorf("fake etcd: changing root's password before auth is on is not modelled")
	}
	c.rootPassword = password
	return nil
}

// RootPassword is the password etcd holds for root, for tests to compare.
func (c *Cluster) RootPassword() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rootPassword
}
