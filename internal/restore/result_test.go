package restore

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// TestTerminationMessageRoundTrip: results survive encoding, a huge message full of escapes and
// control characters still fits the kubelet's 4096 bytes as valid JSON, and anything that is not
// a result is refused.
func TestTerminationMessageRoundTrip(t *testing.T) {
	t.Parallel()
	ok := Result{Outcome: OutcomeRestored, URI: "s3://b/k/nightly.db", SizeBytes: 42, Checksum: sumA, Verification: VerifiedBySidecar, SnapshotVersion: "3.6.16"}
	fail := FailureResult(snapshot.Failf(ReasonChecksumMismatch, "bad <&> %s", strings.Repeat("\"\\\x01é", 3000)))
	for name, r := range map[string]Result{"ok": ok, "failure": fail} {
		data := EncodeTerminationMessage(r)
		if len(data) > snapshot.MaxTerminationMessageBytes {
			t.Fatalf("%s: %d bytes", name, len(data))
		}
		got, err := ParseTerminationMessage(data)
		if err != nil {
			t.Fatalf("%s: %v (%s)", name, err, data)
		}
		if name == "ok" && got != r {
			t.Errorf("ok: %+v, want %+v", got, r)
		}
		if name == "failure" && (got.Reason != ReasonChecksumMismatch || !strings.HasPrefix(got.Message, "bad <&> ")) {
			t.Errorf("failure: %+v", got)
		}
	}
	for _, bad := range []string{"", "etcdutl: panic", `{}`, `{"uri":"x"}`} {
		if _, err := ParseTerminationMessage([]byte(bad)); !errors.Is(err, ErrBadResult) {
			t.Errorf("ParseTerminationMessage(%q) = %v, want ErrBadResult", bad, err)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(EncodeTerminationMessage(ok), &m); err != nil || m["verification"] != "sidecar" {
		t.Errorf("wire format: %v %v", m, err)
	}
}

// TestExitCodes: the restore's own reasons are permanent, and the shared ones keep the snapshot
// agent's classes.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	for _, r := range Reasons {
		want := snapshot.ExitTransient
		switch r {
		case snapshot.ReasonInvalidConfig, ReasonArtifactNotFound, snapshot.ReasonAccessDenied, snapshot.ReasonBucketNotFound,
			snapshot.ReasonNoSpace, ReasonChecksumFileInvalid, ReasonChecksumMismatch, ReasonVersionTooNew, ReasonEtcdutlNotFound, ReasonEtcdutlFailed:
			want = snapshot.ExitPermanent
		}
		if got := ExitCode(r); got != want {
			t.Errorf("ExitCode(%s) = %d, want %d", r, got, want)
		}
	}
}
