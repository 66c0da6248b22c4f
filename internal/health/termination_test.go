package health

import (
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/guard"
)

// TestPatternIDsUnique: IDs name patterns in conditions and remembered terminations.
func TestPatternIDsUnique(t *testing.T) {
	t.Parallel()
	for minor, table := range patternTables {
		seen := map[string]bool{}
		for _, p := range table {
			if seen[p.ID] {
				t.Errorf("etcd %s: pattern %s listed twice", minor, p.ID)
			}
			seen[p.ID] = true
			if p.Description == "" || p.Class == ClassNone {
				t.Errorf("etcd %s: pattern %s has no description or class", minor, p.ID)
			}
		}
	}
}

// TestClassifyTerminationFromSource covers patterns whose failures the fixtures cannot produce
// on loopback in a few seconds (or whose lines fall outside the kubelet's tail), with the
// messages quoted from etcd's source, and the order between overlapping patterns.
func TestClassifyTerminationFromSource(t *testing.T) {
	t.Parallel()
	const clusterID = "cdf818194e3a8c32"
	cases := []struct {
		name, minor, msg string
		wantPattern      string
	}{
		{"snapshot newer than db", "3.6",
			`{"level":"panic","msg":"failed to recover v3 backend from snapshot","error":"failed to find database snapshot file (snap: snapshot file doesn't exist)"}`, "db-snapshot-mismatch"},
		{"db older than snapshot", "3.5",
			`{"level":"fatal","msg":"failed to verify","error":"database file (/var/lib/etcd/member/snap/db index 10) does not match with snapshot (index 20)"}`, "db-snapshot-mismatch"},
		{"initial corruption check", "3.7",
			`{"level":"fatal","msg":"discovery failed","error":"8e9e05c52164694d found data inconsistency with peers"}`, "initial-corrupt-check"},
		{"removed member", "3.6",
			`{"level":"warn","msg":"server error","error":"the member has been permanently removed from the cluster"}`, "member-removed"},
		{"bbolt checksum", "3.6", `{"level":"error","msg":"bbolt: meta page checksum error"}`, "bbolt-invalid"},
		{"specific beats generic panic", "3.5",
			"panic: tocommit(28) is out of range [lastIndex(0)]. Was the raft log corrupted, truncated, or lost?\n", "raft-log-lost"},
		{"generic panic", "3.6", "panic: runtime error: index out of range\n", "panic"},
		{"generic fatal", "3.7", `{"level":"fatal","msg":"listener failed","error":"server is stopping"}`, "fatal"},
		{"foreign cluster ID", "3.6",
			`{"level":"warn","msg":"request cluster ID mismatch","local-member-id":"a","local-member-cluster-id":"1234","remote-peer-cluster-id":"cdf818194e3a8c32"}`, "cluster-id-mismatch"},
		{"own cluster ID: a healthy member seeing an intruder", "3.6",
			`{"level":"warn","msg":"request cluster ID mismatch","local-member-id":"a","local-member-cluster-id":"cdf818194e3a8c32","remote-peer-cluster-id":"1234"}`, ""},
		{"own cluster ID with leading zero and upper case", "3.5",
			`{"level":"warn","msg":"request sent was ignored by remote peer due to cluster ID mismatch","local-member-cluster-id":"0CDF818194E3A8C32"}`, ""},
		{"info lines only", "3.6", `{"level":"info","msg":"stopped remote peer"}`, ""},
		{"empty message", "3.6", "", ""},
		{"unknown minor", "3.9", "panic: failed to open database\n", ""},
		{"full version selects the minor", "v3.6.16", "panic: failed to open database\n", "bbolt-invalid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := ClassifyTermination(tc.minor, clusterID, tc.msg)
			if got.Pattern != tc.wantPattern {
				t.Fatalf("pattern %q (%s), want %q", got.Pattern, got.Class, tc.wantPattern)
			}
		})
	}
}

// TestClassifyGuardRefusal classifies the guard's own refusals, as the guard renders them, for
// every minor and both reasons: the guard runs before etcd, whatever its version.
func TestClassifyGuardRefusal(t *testing.T) {
	t.Parallel()
	for _, minor := range SupportedMinors() {
		for _, reason := range []string{guard.ExpectedByOperator, guard.ExpectedByPod} {
			msg := (&guard.DataLostError{DataDir: "/var/lib/etcd/sub", Reason: reason}).Error() + "\n"
			got := ClassifyTermination(minor, "cdf818194e3a8c32", msg)
			if got.Class != ClassDataLost || got.Pattern != "guard-data-lost" {
				t.Errorf("etcd %s, %q: classified %+v, want DataLost/guard-data-lost", minor, reason, got)
			}
		}
	}
	// Another start failure of the guard is not data loss.
	if got := ClassifyTermination("3.6", "", "etcd-guard: starting /usr/local/bin/etcd: no such file or directory\n"); got.Class == ClassDataLost {
		t.Errorf("a missing etcd binary classified as %+v", got)
	}
}
