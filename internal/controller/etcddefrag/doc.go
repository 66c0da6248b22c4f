// Package etcddefrag holds the EtcdDefrag controller, which runs one defragmentation run over a
// cluster's members, and the EtcdDefragPolicy controller, which creates runs on a cron schedule
// (docs/defrag.md). What to do next is decided by internal/defrag; this package observes,
// acts and reports. It never changes membership; it moves leadership only right before the
// leader's defragmentation, while the EtcdCluster controller holds its own steps for the
// Running run (docs/defrag.md, "Coordination with the cluster controller").
package etcddefrag
