// Package quorum decides whether one membership change or member disruption is safe for an
// etcd cluster. It is pure arithmetic over a projection of the membership (voters with a health
// fact each, learners with the started and in-sync facts etcd reports) and does no I/O, so it
// can be, and is, tested exhaustively (docs/design/quorum.md; docs/design/house-rules.md, rule 6).
//
// # Invariants
//
// Raft commits an entry, including a configuration change, only when a majority of the voting
// members acknowledge it: q(n) = ⌊n/2⌋ + 1 (https://etcd.io/docs/v3.6/faq/#what-is-failure-tolerance).
// Learners do not vote and are not counted (https://etcd.io/docs/v3.6/learning/design-learner/).
// From that the gate derives, for V voters of which H count as healthy:
//
//   - Any membership change needs H ≥ q(V): etcd must be able to commit it, and a change proposed
//     to a cluster without quorum hangs until it times out.
//   - AddLearner also needs no learner to exist: etcd admits one learner at a time by default
//     (--max-learners=1, https://etcd.io/docs/v3.6/op-guide/runtime-configuration/#add-a-new-member-as-learner).
//   - Promote(l) needs l started and H + 1 ≥ q(V + 1). The promoted learner is counted as healthy
//     only because etcd itself refuses to promote a learner that is not in sync with the leader
//     ("can only promote a learner member which is in sync with leader").
//   - Remove(voter m) needs V − 1 ≥ 1 and H − [m healthy] ≥ q(V − 1): the cluster after the
//     removal must still have a healthy majority. Removing a learner needs only the first rule.
//   - Disrupt(m) (restart, defragment, planned Pod delete) changes no membership but takes m away
//     for a while: it needs H − [m healthy] ≥ q(V). A single-voter cluster cannot avoid taking its
//     only voter down, so there the disruption of that voter is allowed but flagged Disruptive.
//   - MoveLeader(to) needs H ≥ q(V), since without quorum there is no leader whose leadership
//     could move, and to to be a healthy voter: leadership cannot go to a learner or to a member
//     that may not answer.
//
// Health is deliberately pessimistic. A voter counts as healthy only when the operator saw it
// healthy in this pass (Status answered within its timeout, Pod Ready, no CORRUPT alarm naming
// it); unknown health counts as unhealthy, and a just-promoted voter counts as unhealthy until its
// first healthy Status as a voter, because until then nobody has observed it voting.
//
// The gate is the first line of defence. etcd's --strict-reconfig-check (default on) is the
// second: it refuses changes that would break an active quorum and adds rules the gate does not
// model (for example, a member add is refused until the leader has been connected to every voter
// for 5 seconds). See docs/design/quorum.md for the reasoning and the tables.
package quorum
