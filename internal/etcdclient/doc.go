// Package etcdclient is the operator's narrow boundary to etcd
// (docs/design/house-rules.md, rule 8): an interface listing only the etcd calls the operator
// makes, an adapter over go.etcd.io/etcd/client/v3 that applies a per-call timeout
// (docs/design/timings.md), maps protobuf responses to this package's own Member and Status types,
// and classifies etcd's errors into sentinels for errors.Is, with addresses and credentials removed
// from their text; and a Pool that keeps one client per cluster across reconciles
// (docs/design/quorum.md, "Pooling").
//
// Keeping the boundary narrow hides protobuf from the planners, makes every etcd failure
// injectable through the fakes in package etcdfake, and lets unit tests fail the way etcd really
// fails. Calls not listed here (Snapshot, auth) are added when the operator needs them, with an
// integration test against real etcd.
//
// Semantics worth knowing, all from etcd's runtime reconfiguration design
// (https://etcd.io/docs/v3.6/op-guide/runtime-configuration/ and
// https://etcd.io/docs/v3.6/learning/design-learner/):
//
//   - A member added with MemberAddAsLearner is listed with an empty Name until its process starts
//     and publishes its attributes; Member.Started reports that.
//   - etcd admits one learner at a time (--max-learners, default 1): ErrTooManyLearners.
//   - MemberPromote succeeds only once the learner's log has caught up with the leader's:
//     ErrLearnerNotReady is a reason to wait, not a failure.
//   - With --strict-reconfig-check (the default), etcd refuses an add until the leader has been
//     connected to every voter for 5 s (ErrUnhealthyCluster), and a removal that would leave too
//     few started voters (ErrNotEnoughStartedMembers) or break the active quorum
//     (ErrUnhealthyCluster).
//   - MoveLeader must be sent to the current leader; Conn.MoveLeader finds it among the
//     configured endpoints.
//   - Membership calls carry etcd's "require leader" metadata, so that a cluster without quorum
//     answers ErrNoLeader at once instead of letting the call hang until its timeout.
package etcdclient
