package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
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
