package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

var success = Result{
	URI:         "s3://bucket/backups/nightly.db",
	SizeBytes:   1 << 30,
	Checksum:    "sha256:" + strings.Repeat("ab", 32),
	Revision:    123456,
	EtcdVersion: "3.6.16",
}

func TestTerminationMessageRoundTrip(t *testing.T) {
	t.Parallel()
	failure := Result{Reason: ReasonArtifactExists, Message: "an artifact exists"}
	for _, r := range []Result{success, failure} {
		data := EncodeTerminationMessage(r)
		got, err := ParseTerminationMessage(data)
		if err != nil {
			t.Fatalf("ParseTerminationMessage(%s): %v", data, err)
		}
		if diff := cmp.Diff(r, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
	// The field names are the contract with the controller.
	const want = `{"uri":"s3://bucket/backups/nightly.db","sizeBytes":1073741824,"checksum":"sha256:` +
		`abababababababababababababababababababababababababababababababab","revision":123456,"etcdVersion":"3.6.16"}`
	if got := string(EncodeTerminationMessage(success)); got != want {
		t.Errorf("encoding = %s\nwant %s", got, want)
	}
	// The agent's own measurements, which the e2e timing report reads from the Pod.
	measured := success
	measured.StreamMillis, measured.PeakRSSBytes = 4200, 40<<20
	const wantMeasured = `"etcdVersion":"3.6.16","streamMillis":4200,"peakRSSBytes":41943040}`
	if got := string(EncodeTerminationMessage(measured)); !strings.HasSuffix(got, wantMeasured) {
		t.Errorf("encoding = %s\nwant it to end with %s", got, wantMeasured)
	}
}

// TestTerminationMessageFitsTheKubeletLimit: however long the message, the encoding stays
// within 4096 bytes, valid JSON, valid UTF-8, with the reason intact.
func TestTerminationMessageFitsTheKubeletLimit(t *testing.T) {
	t.Parallel()
	for _, msg := range []string{
		strings.Repeat("x", 5000),
		strings.Repeat("é", 3000),                            // 2 bytes each
		strings.Repeat("\x01", 2000),                         // 6 bytes each once escaped
		strings.Repeat(`"<>&`, 1500),                         // escaped by encoding/json
		strings.Repeat("x", 4040) + strings.Repeat("日本語", 8), // cut inside a multi-byte rune
	} {
		data := EncodeTerminationMessage(Result{Reason: ReasonStoreFailed, Message: msg})
		if len(data) > MaxTerminationMessageBytes {
			t.Errorf("encoding of a %d-byte message is %d bytes", len(msg), len(data))
		}
		var r Result
		if err := json.Unmarshal(data, &r); err != nil || !utf8.ValidString(r.Message) {
			t.Errorf("encoding is not valid JSON and UTF-8: %v", err)
		}
		if r.Reason != ReasonStoreFailed || !strings.HasSuffix(r.Message, truncationMark) {
			t.Errorf("reason %q, message ends %q; want the reason and the truncation mark", r.Reason, r.Message[max(0, len(r.Message)-10):])
		}
		if len(data) < MaxTerminationMessageBytes-8 {
			t.Errorf("a %d-byte message was cut to %d bytes: more than needed", len(msg), len(data))
		}
	}
}

func TestParseTerminationMessageRefusesIncompleteResults(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"not JSON":           `etcd snapshot failed`,
		"empty":              `{}`,
		"no checksum":        `{"uri":"s3://b/k.db"}`,
		"uppercase checksum": `{"uri":"s3://b/k.db","checksum":"sha256:` + strings.Repeat("AB", 32) + `"}`,
		"negative size":      `{"uri":"s3://b/k.db","checksum":"sha256:` + strings.Repeat("ab", 32) + `","sizeBytes":-1}`,
	}
	for name, data := range bad {
		if _, err := ParseTerminationMessage([]byte(data)); !errors.Is(err, ErrBadResult) {
			t.Errorf("%s: %v, want ErrBadResult", name, err)
		}
	}
	// A newer agent may report more.
	if _, err := ParseTerminationMessage([]byte(`{"reason":"NoSpace","message":"full","hint":"x"}`)); err != nil {
		t.Errorf("unknown field refused: %v", err)
	}
}

func TestReasons(t *testing.T) {
	t.Parallel()
	permanent := map[Reason]bool{
		ReasonInvalidConfig: true, ReasonEtcdAuthFailed: true, ReasonArtifactExists: true,
		ReasonNoSpace: true, ReasonAccessDenied: true, ReasonBucketNotFound: true,
	}
	seen := map[Reason]bool{}
	for _, r := range Reasons {
		if seen[r] {
			t.Errorf("reason %s listed twice", r)
		}
		seen[r] = true
		want := ExitTransient
		if permanent[r] {
			want = ExitPermanent
		}
		if got := r.ExitCode(); got != want {
			t.Errorf("%s.ExitCode() = %d, want %d", r, got, want)
		}
	}
}

func TestReasonOf(t *testing.T) {
	t.Parallel()
	inner := Fail(ReasonStoreFailed, errors.New("write failed"))
	cases := []struct {
		err  error
		want Reason
	}{
		{nil, ""},
		{errors.New("plain"), ReasonFailed},
		{inner, ReasonStoreFailed},
		{fmt.Errorf("wrapped: %w", inner), ReasonStoreFailed},
		// The outermost classification wins: the caller knows better (a cancelled run).
		{Failf(ReasonInterrupted, "stopped: %w", inner), ReasonInterrupted},
	}
	for _, c := range cases {
		if got := ReasonOf(c.err); got != c.want {
			t.Errorf("ReasonOf(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	if !errors.Is(Failf(ReasonNoSpace, "x: %w", errSentinel), errSentinel) {
		t.Error("Failure does not unwrap")
	}
}

var errSentinel = errors.New("sentinel")

// FuzzParseTerminationMessage: the controller parses what a container wrote, which may be
// anything. Parsing never panics, and what it accepts encodes to a message it accepts again,
// equal to the first.
func FuzzParseTerminationMessage(f *testing.F) {
	f.Add(EncodeTerminationMessage(success))
	f.Add(EncodeTerminationMessage(Result{Reason: ReasonNoSpace, Message: "full"}))
	f.Add([]byte(`{"uri":"x","checksum":"sha256:"}`))
	f.Add([]byte(`{"uri":"x","checksum":"sha256:` + zeros() + `","pruned":["a.db"],"prunedCount":1,"pruneError":"e"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseTerminationMessage(data)
		if err != nil {
			return
		}
		again, err := ParseTerminationMessage(EncodeTerminationMessage(r))
		if err != nil {
			t.Fatalf("re-encoded result refused: %v", err)
		}
		if len(EncodeTerminationMessage(r)) <= MaxTerminationMessageBytes && again.URI != r.URI {
			t.Fatalf("URI changed: %q → %q", r.URI, again.URI)
		}
	})
}

// TestTerminationMessageKeepsThePruneReportWithinTheLimit: a prune of many long names, with a
// long error, still fits; the artifact fields and the count survive, names are dropped from the
// end, and the error is cut before any name is lost only when the names alone do not fit.
func TestTerminationMessageKeepsThePruneReportWithinTheLimit(t *testing.T) {
	t.Parallel()
	names := make([]string, 60)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%09d.db", strings.Repeat("n", 100), i)
	}
	r := success
	r.Pruned, r.PrunedCount = names, len(names)
	data := EncodeTerminationMessage(r)
	got, err := ParseTerminationMessage(data)
	if err != nil || len(data) > MaxTerminationMessageBytes {
		t.Fatalf("%d bytes: %v", len(data), err)
	}
	if got.URI != success.URI || got.Checksum != success.Checksum || got.PrunedCount != 60 ||
		len(got.Pruned) == 0 || len(got.Pruned) == 60 || !slices.Equal(got.Pruned, names[:len(got.Pruned)]) {
		t.Errorf("kept %d names of 60, count %d, URI %s", len(got.Pruned), got.PrunedCount, got.URI)
	}
	if len(data) < MaxTerminationMessageBytes-len(names[0])-4 {
		t.Errorf("%d bytes: more names dropped than needed", len(data))
	}

	r.PruneError = strings.Repeat("\x01", 3000)
	got, err = ParseTerminationMessage(EncodeTerminationMessage(r))
	if err != nil || got.PrunedCount != 60 || len(got.Pruned) != 0 || !strings.HasSuffix(got.PruneError, truncationMark) {
		t.Errorf("with a long error: %d names, error ends %q, %v", len(got.Pruned), got.PruneError[max(0, len(got.PruneError)-8):], err)
	}

	small := success
	small.Pruned, small.PrunedCount, small.PruneError = names[:2], 2, "deleting x: AccessDenied"
	if got, err := ParseTerminationMessage(EncodeTerminationMessage(small)); err != nil || !cmp.Equal(got, small) {
		t.Errorf("a report that fits changed: %+v, %v", got, err)
	}
	if _, err := ParseTerminationMessage([]byte(`{"uri":"s3://b/k.db","checksum":"sha256:` + zeros() + `","pruned":["a.db"]}`)); !errors.Is(err, ErrBadResult) {
		t.Errorf("pruned names beyond prunedCount accepted: %v", err)
	}
}

func zeros() string { return strings.Repeat("0", 64) }
