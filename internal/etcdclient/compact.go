package etcdclient

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Compact discards the keyspace's history below revision rev. With physical, it returns only
// once every member has applied the compaction to its backend. The operator never compacts (etcd
// does, per --auto-compaction-*); kubectl-etcd's compact command does, at a person's request.
func (c *Conn) Compact(ctx context.Context, rev int64, physical bool) error {
	if err := c.closedErr("Compact"); err != nil {
		return err
	}
	// A physical compaction waits for every member's backend, which takes as long as a
	// keyspace scan: HashKV's bound.
	ctx, cancel := clusterCtx(ctx, HashKVTimeout)
	defer cancel()
	var opts []clientv3.CompactOption
	if physical {
		opts = append(opts, clientv3.WithCompactPhysical())
	}
	if _, err := c.cli.Compact(ctx, rev, opts...); err != nil {
		return c.fail("Compact", err)
	}
	return nil
}
