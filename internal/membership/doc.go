// Package membership decides, in pure code, what the EtcdCluster controller does next: the one
// membership change, member disruption or Kubernetes write of a pass (behaviour.md §2 step 6),
// the lock on the latched target (§5), and the cluster's conditions (§22).
//
// Its inputs are a Scope — the EtcdMembers, PVCs and the etcd view observed in one pass, plus a
// clock reading — and its outputs are values: an Action, a Lock decision, conditions. It does no
// I/O, so every rule is table-tested without a cluster (style.md rule 7).
//
// Next applies the first matching rule, in this order:
//
//  1. finish an interrupted step: a member carrying removal-reason that etcd still lists is
//     removed, one that etcd no longer lists is deleted; a pending member (no initialCluster) is
//     added as a learner, or only patched when its peer URL is already in etcd; an orphan PVC
//     is re-adopted (its EtcdMember re-created under the same name) when etcd still lists its
//     member, or, with no EtcdMember left and etcd silent, every one in turn; a learner no
//     EtcdMember explains is removed after OrphanMemberGrace; the PVC of a member that neither
//     Kubernetes nor etcd knows any more is deleted;
//  2. bootstrap (§4, states B0–B4): create the seed, give it its initialCluster, wait for it, latch
//     the cluster ID;
//  3. replace a failed member (§9) — a later milestone: the extension point is marked in Next;
//  4. promote a started learner;
//  5. scale up (§6): wake the dormant member, or create a member; scale down (§7): rank a
//     victim, move leadership away from it, remove it; pause (§8): make the last member dormant;
//  6. one rolling-update step (§12) — a later milestone, marked in Next.
//
// Every action that changes etcd membership or leadership carries the quorum gate's Decision
// (internal/quorum); a refused decision turns into a Blocked action whose condition is
// Progressing=True/WaitingForHealthyMembers. The planner never calls an etcd mutation the gate
// has not allowed.
//
// Status written by earlier passes is never an input to a decision: members are matched to etcd
// by peer URL and name, voters and learners come from etcd's member list, health from this pass's
// Status answers and Pod readiness (style.md rule 4).
package membership
