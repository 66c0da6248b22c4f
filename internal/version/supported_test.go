package version_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/etcd-operator/etcd-operator/hack/binaries/pinned"
	"github.com/etcd-operator/etcd-operator/internal/version"
)

// TestSupportedMatchesPinnedVersions keeps the supported table equal to the etcd releases
// hack/versions.env pins (one per minor), the ones every test suite runs.
func TestSupportedMatchesPinnedVersions(t *testing.T) {
	t.Parallel()
	root, err := pinned.FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	pins, err := pinned.LoadVersions(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range version.Supported() {
		got = append(got, v.String())
	}
	if diff := cmp.Diff(pins.Etcd, got); diff != "" {
		t.Errorf("version.Supported() differs from %s (-pinned +supported):\n%s", pinned.VersionsFile, diff)
	}
}
