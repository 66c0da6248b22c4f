package restore

import (
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

var (
	sumA = "sha256:" + strings.Repeat("a", 64)
	sumB = "sha256:" + strings.Repeat("b", 64)
)

// TestExpectedChecksum: the spec's checksum wins over the sidecar (which is then not even
// parsed), the sidecar is used without one, neither means unverified, and a sidecar that is not
// sha256sum's format fails closed.
func TestExpectedChecksum(t *testing.T) {
	t.Parallel()
	sidecarB := Sidecar{Present: true, Content: []byte(strings.Repeat("b", 64) + "  nightly.db\n")}
	for name, c := range map[string]struct {
		spec    string
		sidecar Sidecar
		want    string
		how     Verification
		reason  snapshot.Reason
	}{
		"spec only":             {spec: sumA, want: sumA, how: VerifiedBySpec},
		"spec over sidecar":     {spec: sumA, sidecar: sidecarB, want: sumA, how: VerifiedBySpec},
		"spec over bad sidecar": {spec: sumA, sidecar: Sidecar{Present: true, Content: []byte("junk")}, want: sumA, how: VerifiedBySpec},
		"sidecar":               {sidecar: sidecarB, want: sumB, how: VerifiedBySidecar},
		"sha256sum binary mode": {sidecar: Sidecar{Present: true, Content: []byte(strings.Repeat("b", 64) + " *x.db")}, want: sumB, how: VerifiedBySidecar},
		"neither":               {how: Unverified},
		"empty sidecar":         {sidecar: Sidecar{Present: true}, reason: ReasonChecksumFileInvalid},
		"upper-case sidecar":    {sidecar: Sidecar{Present: true, Content: []byte(strings.Repeat("B", 64) + "  x.db")}, reason: ReasonChecksumFileInvalid},
	} {
		want, how, err := ExpectedChecksum(c.spec, c.sidecar)
		if snapshot.ReasonOf(err) != c.reason || want != c.want || how != c.how {
			t.Errorf("%s: ExpectedChecksum = %q, %q, %v; want %q, %q, reason %q", name, want, how, err, c.want, c.how, c.reason)
		}
	}
}

// TestCheckChecksum: a mismatch is ChecksumMismatch naming both digests and where the expected
// one came from; nothing expected passes.
func TestCheckChecksum(t *testing.T) {
	t.Parallel()
	if err := CheckChecksum(sumA, VerifiedBySpec, sumA); err != nil {
		t.Errorf("match: %v", err)
	}
	if err := CheckChecksum("", Unverified, sumA); err != nil {
		t.Errorf("nothing expected: %v", err)
	}
	err := CheckChecksum(sumA, VerifiedBySidecar, sumB)
	if snapshot.ReasonOf(err) != ReasonChecksumMismatch || !strings.Contains(err.Error(), sumA) || !strings.Contains(err.Error(), sumB) ||
		!strings.Contains(err.Error(), "sidecar") {
		t.Errorf("mismatch against the sidecar: %v", err)
	}
	if err := CheckChecksum(sumA, VerifiedBySpec, sumB); !strings.Contains(err.Error(), "spec.bootstrap.restore.checksum") {
		t.Errorf("mismatch against the spec: %v", err)
	}
}

// TestCheckVersion: a snapshot of a newer minor (or major) than the target is refused, an older
// or equal minor of any patch is restored, an unknown version passes and a garbled one is
// refused.
func TestCheckVersion(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		snap, target string
		reason       snapshot.Reason
	}{
		{"3.6.16", "3.6.16", ""},
		{"3.6.16", "3.6.5", ""}, // a newer patch of the same minor: same data format
		{"3.5.35", "3.6.5", ""},
		{"3.5.0", "3.7.3", ""},
		{"", "3.5.35", ""},
		{"3.6.0", "3.5.35", ReasonVersionTooNew},
		{"3.7.3", "3.6.16", ReasonVersionTooNew},
		{"4.0.0", "3.7.3", ReasonVersionTooNew},
		{"v3.6.1", "3.6.1", ""},
		{"3.6", "3.6.1", ReasonVersionTooNew},
		{"3.6.1", "x", snapshot.ReasonInvalidConfig},
	} {
		err := CheckVersion(c.snap, c.target)
		if snapshot.ReasonOf(err) != c.reason {
			t.Errorf("snapshot %q into %q: %v, want reason %q", c.snap, c.target, err, c.reason)
		}
		if c.reason == ReasonVersionTooNew && c.snap == "3.6.0" && !strings.Contains(err.Error(), "3.6 or newer") {
			t.Errorf("the refusal does not say what would work: %v", err)
		}
	}
}

// TestExactSource: a restore names one file: no empty key, no prefix, no folder, nothing that
// leaves the claim.
func TestExactSource(t *testing.T) {
	t.Parallel()
	for key, ok := range map[string]bool{"nightly.db": true, "a/b/nightly.db": true, "": false, "a/b/": false, strings.Repeat("k", 1025): false} {
		if _, err := ExactKey(key); (err == nil) != ok {
			t.Errorf("ExactKey(%.20q) = %v, want ok %v", key, err, ok)
		}
	}
	for p, want := range map[string]string{"nightly.db": "nightly.db", "./etcd//nightly.db": "etcd/nightly.db", "": "", "etcd/": "",
		".": "", "../x.db": "", "/abs/x.db": "", "a/../../x.db": ""} {
		got, err := ExactPath(p)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("ExactPath(%q) = %q, %v; want %q", p, got, err, want)
		}
	}
}

// TestDataNeeded: twice the artifact plus etcd's first WAL segment.
func TestDataNeeded(t *testing.T) {
	t.Parallel()
	if got := DataNeeded(100 << 20); got != 264<<20 {
		t.Errorf("DataNeeded(100 MiB) = %d", got)
	}
}
