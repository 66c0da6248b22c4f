package monitoring

// etcdMetricNames are the metrics of etcd itself that the dashboard reads, scraped from the
// members' metrics port 2381 (a PodMonitor that adds the namespace and cluster labels;
// docs/monitoring.md, "Scraping"). Histograms are listed under their base name. Each is a plain
// (unlabelled) collector of etcd's server in every supported minor, so it exists from the
// member's start, before any traffic: TestEtcdExportsTheListedMetrics checks that a real etcd of
// every pinned minor exports it. Why each is on the dashboard is said above it.
var etcdMetricNames = []string{
	// Disk latency, the first cause of leader changes and slow requests; the alerts
	// EtcdMemberSlowFsync and EtcdMemberSlowCommit read the same histograms.
	"etcd_disk_wal_fsync_duration_seconds",
	"etcd_disk_backend_commit_duration_seconds",
	// Leadership as each member sees it, beside the operator's pass-to-pass view.
	"etcd_server_leader_changes_seen_total",
	// Raft proposals: committed (throughput), failed (elections, lost quorum), pending (a
	// leader that cannot keep up).
	"etcd_server_proposals_committed_total",
	"etcd_server_proposals_failed_total",
	"etcd_server_proposals_pending",
	// Key-value requests by kind.
	"etcd_mvcc_range_total",
	"etcd_mvcc_put_total",
	"etcd_mvcc_delete_total",
	"etcd_mvcc_txn_total",
	// Client traffic.
	"etcd_network_client_grpc_received_bytes_total",
	"etcd_network_client_grpc_sent_bytes_total",
}
