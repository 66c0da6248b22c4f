package membership

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// RecoveryNote is what the Degraded message of a cluster that lost its quorum tells a person
// about approving a recovery (docs/disaster-recovery.md, "When it needs your approval"): the
// voters that do not answer, the candidate, and the exact approve-recovery value. The operator
// writes it (recoveryNote) and kubectl etcd recover reads it back (ParseRecoveryNote); both go
// through the text below, so the two cannot drift apart.
type RecoveryNote struct {
	// Silent names the voters that do not answer, each followed by "(down)" or "(data lost)";
	// empty when the message names none.
	Silent []string
	// Candidate is the member a recovery would start from: the answering voter with the most
	// up-to-date log.
	Candidate string
	// Approval is the approve-recovery value that approves recovery from Candidate.
	Approval string
	// Rejected is the approve-recovery value on the cluster that does not match Candidate; empty
	// unless the note is the refusal of such a value (it names no silent voters then).
	Rejected string
}

// The pieces of the approval note, in order: "waiting for <silent> to return; if they cannot,
// approve recovery from <candidate> (…) by annotating the EtcdCluster <key>=<value>".
const (
	noteWaitingFor  = "waiting for "
	noteApproveFrom = " to return; if they cannot, approve recovery from "
	noteAnnotate    = " (the most up-to-date log; writes only they hold are lost) by annotating the EtcdCluster " +
		etcdv1alpha2.AnnotationApproveRecovery + "="
	noteNone = "none"
)

var (
	approvalNoteRE = regexp.MustCompile(regexp.QuoteMeta(noteWaitingFor) + `(.+?)` + regexp.QuoteMeta(noteApproveFrom) +
		`(\S+)` + regexp.QuoteMeta(noteAnnotate) + `(\S+)`)
	approvalRefusalRE = regexp.MustCompile(`the ` + regexp.QuoteMeta(etcdv1alpha2.AnnotationApproveRecovery) +
		` value ("(?:[^"\\]|\\.)*") does not match the current candidate: recovery from (\S+) would need ("(?:[^"\\]|\\.)*")`)
)

// approvalNote is the note naming the candidate and its approval.
func approvalNote(silent []string, candidate, approval string) string {
	return noteWaitingFor + joinNames(silent) + noteApproveFrom + candidate + noteAnnotate + approval
}

// approvalRefusalText says that approve-recovery value got is not approval, the value of
// recovery from candidate.
func approvalRefusalText(got, candidate, approval string) string {
	return fmt.Sprintf("the %s value %q does not match the current candidate: recovery from %s would need %q",
		etcdv1alpha2.AnnotationApproveRecovery, got, candidate, approval)
}

// ParseRecoveryNote reads the candidate and its approval back from a Degraded message; false
// when the message names no candidate (quorum is there, the candidate is not named yet, a
// recovery runs or nothing can be recovered).
func ParseRecoveryNote(degraded string) (RecoveryNote, bool) {
	if m := approvalRefusalRE.FindStringSubmatch(degraded); m != nil {
		got, err1 := strconv.Unquote(m[1])
		approval, err2 := strconv.Unquote(m[3])
		if err1 == nil && err2 == nil {
			return RecoveryNote{Candidate: m[2], Approval: approval, Rejected: got}, true
		}
	}
	m := approvalNoteRE.FindStringSubmatch(degraded)
	if m == nil {
		return RecoveryNote{}, false
	}
	n := RecoveryNote{Candidate: m[2], Approval: m[3]}
	if m[1] != noteNone {
		n.Silent = strings.Split(m[1], ", ")
	}
	return n, true
}

// ParseApprovalValue splits an approve-recovery value, <clusterID>/<member>/<appliedIndex>
// (ApprovalValue), into its parts.
func ParseApprovalValue(v string) (clusterID, member string, appliedIndex uint64, err error) {
	parts := strings.Split(v, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return "", "", 0, fmt.Errorf("approve-recovery value %q is not <clusterID>/<member>/<appliedIndex>", v)
	}
	appliedIndex, err = strconv.ParseUint(parts[2], 10, 64)
	if err != nil {
		return "", "", 0, fmt.Errorf("approve-recovery value %q: the applied index is not a number: %w", v, err)
	}
	return parts[0], parts[1], appliedIndex, nil
}
