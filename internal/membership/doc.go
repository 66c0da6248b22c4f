// Package membership decides, in pure code, everything the EtcdCluster controller does in a pass
// (docs/design/reconcile-pass.md): PlanPass returns the whole plan, which the controller's
// executors carry out. It does no I/O, so every rule is table-tested without a cluster
// (docs/design/house-rules.md, rule 7).
//
// Its input is a Scope: the EtcdMembers, PVCs and etcd's view observed in one pass, projected
// for the latched target, plus a clock reading. PlanPass decides, in this order:
//
//  1. the lock on the latched target (Decide; docs/design/membership-flows.md, "Latched
//     target"), after the version rules (VersionRejection; docs/design/versions.md). An
//     adoption ends the plan: it is written before anything acts on it;
//  2. the writes that disrupt nothing: member status fields from etcd (memberID, isVoter,
//     version), in-place template fields (additionalMetadata, imagePullSecrets), PVC growth and
//     recorded sizes (PlanStorage; docs/design/storage.md);
//  3. over the scope as those writes leave it, the one membership change or member disruption
//     (Next), first matching rule wins (docs/design/membership-flows.md, "Planner order"):
//     hold everything while etcd has auth on that the spec does not ask for; recover a lost
//     quorum; repair the operator's access (a missed auth latch, a changed root password);
//     finish an interrupted step (removals, pending members, re-adoption of orphan PVCs, orphan
//     etcd members, CORRUPT alarms of removed members, PVCs of removed members); bootstrap; wake
//     a paused cluster (held while the version rules refuse the latched version over the
//     member's data); wait for etcd; replace a failed member (docs/design/healing.md); promote
//     a learner; scale up or down, or pause; one rolling-update step
//     (docs/design/rolling-updates.md); report storage growth.
//
// Every action that changes etcd membership or leadership, or restarts a member, carries the
// quorum gate's Decision (internal/quorum); a refused decision turns into a Blocked action
// (Progressing=True/WaitingForHealthyMembers). The planner never plans an etcd mutation the gate
// has not allowed. Conditions (Conditions) and counts (Count) are computed from the same scope.
//
// Decisions trust this pass's observation: members are matched to etcd by peer URL and name,
// voters and learners come from etcd's member list, health from this pass's Status answers and
// Pod readiness. A few decisions read status written by earlier passes, each because nothing in
// one observation can say the same:
//
//   - status.observed, observedGeneration, progressDeadline: the lock itself (what was latched,
//     and until when it may converge);
//   - EtcdMember status.memberID (Member.MemberID): a member's etcd identity once recorded, so
//     that a member re-added under the same peer URL is not taken for the old one
//     (etcdMemberByIdentity, replacement and "never started");
//   - EtcdMember status.version (Member.Version): the version a member that is down right now
//     last ran, for the version rules and the wake check;
//   - status.minorSince: when every member first ran the lowest minor, for the 3.6 → 3.7 hold;
//   - status.replacementBackoff (Scope.Backoff): how many members in a row never started, so
//     that a crash does not reset the back-off;
//   - the member's conditions Ready, Healthy and Updated: the EtcdMember controller's
//     observation of its Pod, confirmed against the Pod the two controllers' cache shares;
//   - EtcdMember status.isVoter (Member.VoterHint): only while etcd does not answer, and only
//     for counts and conditions, never for a membership decision;
//   - the cluster's own Available and Progressing conditions (Scope.Bootstrapping): only the
//     wording of Progressing (Bootstrapping rather than ScalingUp).
package membership
