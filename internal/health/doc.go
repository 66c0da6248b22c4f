// Package health classifies the health of one etcd member from plain observations: it turns
// what the EtcdMember controller sees (the Pod and its container's terminations, the Node, the
// PVC, etcd's member list and alarms, the clock) into the member's Healthy condition, whether
// the member should be replaced, and when to look again (docs/design/healing.md).
//
// It decides and never acts: no clients, no I/O, time only through an argument. The EtcdMember
// controller writes the condition it returns; the EtcdCluster controller, the only writer of
// membership, acts on Replace through the quorum gate (docs/design/house-rules.md, rules 2 and 7).
//
// Fatal etcd exits are recognised from the container's termination message (Pods run with
// terminationMessagePolicy FallbackToLogsOnError, so the message is the tail of etcd's log)
// against a pattern table pinned per supported etcd minor. The table is checked against logs
// captured from real etcd processes of each pinned release: testdata/<minor>/*.log, produced by
// TestTerminationFixtures in test/integration/health (see testdata/README.md).
package health
