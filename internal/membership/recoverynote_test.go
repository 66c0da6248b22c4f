package membership

import (
	"reflect"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// TestParseRecoveryNoteReadsWhatTheOperatorWrites: the note recoveryNote writes into Degraded,
// and the refusal of a stale value, read back give the candidate and the exact value.
func TestParseRecoveryNoteReadsWhatTheOperatorWrites(t *testing.T) {
	s := stranded([]etcdclient.Member{voter(1, "a"), voter(2, "b"), voter(3, "c")}, map[string]quorum.LogPosition{"a": {Term: 2, Index: 40}},
		withID(mem("a", 1), 1), withID(dataLost(mem("b", 2)), 2), withID(dataLost(mem("c", 3)), 3))
	s.Members[0].Ready, s.Members[0].PodReady = false, false
	s.QuorumLostSince = s.Now.Add(-GuardedRecoveryDelay - time.Second)

	degraded := "quorum lost; not Ready: a, b, c" + recoveryNote(&s)
	got, ok := ParseRecoveryNote(degraded)
	want := RecoveryNote{Silent: []string{"b (data lost)", "c (data lost)"}, Candidate: "a", Approval: "cid/a/39"}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseRecoveryNote(%q) = %+v, %t; want %+v", degraded, got, ok, want)
	}

	s.Approval = "cid/a/38"
	degraded = "quorum lost; not Ready: a, b, c" + recoveryNote(&s)
	got, ok = ParseRecoveryNote(degraded)
	want = RecoveryNote{Candidate: "a", Approval: "cid/a/39", Rejected: "cid/a/38"}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseRecoveryNote(%q) = %+v, %t; want %+v", degraded, got, ok, want)
	}
}

func TestParseRecoveryNoteFindsNoCandidate(t *testing.T) {
	for _, msg := range []string{
		"no member needs attention",
		"quorum lost; not Ready: a; waiting for b (down) to return; nothing is replaced without a quorum (if they cannot return, a recovery candidate is named after 10m0s)",
		"quorum lost; not Ready: a; recovering from b (Approved), nothing is replaced until it serves alone",
	} {
		if n, ok := ParseRecoveryNote(msg); ok {
			t.Errorf("ParseRecoveryNote(%q) = %+v, want none", msg, n)
		}
	}
}

func TestParseApprovalValue(t *testing.T) {
	cid, member, idx, err := ParseApprovalValue(ApprovalValue("8e9e05c52164694d", "demo-x7k2p", 10412))
	if err != nil || cid != "8e9e05c52164694d" || member != "demo-x7k2p" || idx != 10412 {
		t.Fatalf("round trip = %q %q %d %v", cid, member, idx, err)
	}
	for _, bad := range []string{"", "cid/member", "cid/member/x", "/member/1", "cid//1", "a/b/c/1"} {
		if _, _, _, err := ParseApprovalValue(bad); err == nil {
			t.Errorf("ParseApprovalValue(%q) accepted it", bad)
		}
	}
}
