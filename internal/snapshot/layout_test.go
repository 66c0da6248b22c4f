package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func TestObjectKeyAndURIs(t *testing.T) {
	t.Parallel()
	cases := []struct{ prefix, want string }{
		{"", "nightly.db"},
		{"backups", "backups/nightly.db"},
		{"backups/", "backups/nightly.db"},
		{"/backups/etcd/", "backups/etcd/nightly.db"},
	}
	for _, c := range cases {
		if got := ObjectKey(c.prefix, "nightly"); got != c.want {
			t.Errorf("ObjectKey(%q) = %q, want %q", c.prefix, got, c.want)
		}
	}
	if got := S3URI("b", ObjectKey("", "n")); got != "s3://b/n.db" {
		t.Errorf("S3URI = %q", got)
	}
	if got := PVCURI("claim", "", "n"); got != "pvc://claim/n.db" {
		t.Errorf("PVCURI without subPath = %q", got)
	}
	if got := PVCURI("claim", "a/b", "n"); got != "pvc://claim/a/b/n.db" {
		t.Errorf("PVCURI with subPath = %q", got)
	}
}

func TestCleanSubPath(t *testing.T) {
	t.Parallel()
	ok := map[string]string{"": "", ".": "", "a": "a", "a/b/": "a/b", "./a//b": "a/b"}
	for in, want := range ok {
		if got, err := CleanSubPath(in); err != nil || got != want {
			t.Errorf("CleanSubPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"/abs", "..", "a/../../b", "a/..", "x\x00"} {
		if _, err := CleanSubPath(bad); !errors.Is(err, ErrInvalidName) {
			t.Errorf("CleanSubPath(%q) = %v, want ErrInvalidName", bad, err)
		}
	}
}

func TestValidateSnapshotName(t *testing.T) {
	t.Parallel()
	for _, good := range []string{"nightly-2026-12-02", "s", "backup.v1", strings.Repeat("a", 253)} {
		if err := ValidateSnapshotName(good); err != nil {
			t.Errorf("valid name refused: %v", err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", `a\b`, "a*", "a[1]", "Upper", "-a", strings.Repeat("a", 254)} {
		if err := ValidateSnapshotName(bad); !errors.Is(err, ErrInvalidName) {
			t.Errorf("ValidateSnapshotName(%q) = %v, want ErrInvalidName", bad, err)
		}
	}
}

// TestChecksumFileRoundTrip: the sidecar is what sha256sum writes, and reads back.
func TestChecksumFileRoundTrip(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("etcd"))
	content := ChecksumFileContent(sum, "n.db")
	if want := hex.EncodeToString(sum[:]) + "  n.db\n"; string(content) != want {
		t.Errorf("content = %q, want %q (sha256sum's format)", content, want)
	}
	checksum, name, err := ParseChecksumFile(content)
	if err != nil || checksum != FormatChecksum(sum) || name != "n.db" {
		t.Errorf("ParseChecksumFile = %q, %q, %v", checksum, name, err)
	}
	// sha256sum -b marks binary mode with '*'.
	if _, name, err := ParseChecksumFile([]byte(string(content[:64]) + " *n.db\n")); err != nil || name != "n.db" {
		t.Errorf("binary-mode line: %q, %v", name, err)
	}
	for _, bad := range []string{"", "abc  n.db\n", string(content[:64]) + "\n", "ZZ" + string(content[2:])} {
		if _, _, err := ParseChecksumFile([]byte(bad)); !errors.Is(err, ErrBadChecksumFile) {
			t.Errorf("ParseChecksumFile(%q) = %v, want ErrBadChecksumFile", bad, err)
		}
	}
}
