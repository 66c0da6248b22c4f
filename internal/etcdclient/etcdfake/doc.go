// Package etcdfake holds the two fakes of etcdclient.Client (docs/design/house-rules.md, rule 8):
// Recorder, which returns canned responses and errors per method and logs every call, for asserting
// which calls a step makes; and Cluster, which enforces etcd's membership rules (one learner,
// quorum to commit, "peer URL exists", "learner not in sync", strict reconfiguration checks), for
// driving planners and step functions through realistic failures. The etcdcluster envtest suite
// (test/integration/etcdcluster) runs one Cluster per EtcdCluster behind its fake kubelet, which
// seeds it, starts and stops members as their Pods come and go (Seed, Start, Stop), and reads
// the calls the controller made.
//
// Fakes are for decision logic only (TESTING.md, "Unit"). What etcd really does is proven against
// real etcd processes in test/integration/etcdclient.
package etcdfake
