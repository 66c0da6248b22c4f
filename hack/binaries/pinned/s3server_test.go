package pinned

import (
	"strings"
	"testing"
)

// The repository's SeaweedFS pin is readable, so hack/binaries names its cache folder.
func TestS3ServerVersionOfThisRepository(t *testing.T) {
	t.Parallel()
	root, err := FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	v, err := S3ServerVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v, "v") || strings.ContainsAny(v, " /") {
		t.Fatalf("S3ServerVersion = %q, want a module version such as v0.0.0-20261109003541-7506e5f91cd6", v)
	}
}
