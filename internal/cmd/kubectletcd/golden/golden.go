// Package golden compares a command's output with a file under the test's testdata directory;
// `go test ./internal/cmd/... -update` rewrites the files from the output instead. Golden files
// pin the text and JSON shapes that people and scripts read (docs/kubectl-etcd.md,
// "Machine-readable output"), so a change to them shows in review as a diff of the files.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update is registered once, here, so that every test package using Check shares one -update.
var update = flag.Bool("update", false, "rewrite the golden files under testdata from the output")

// Check compares got with testdata/name, or writes it there under -update.
func Check(tb testing.TB, name string, got []byte) {
	tb.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o600); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path) //nolint:gosec // G304: the test names its own file under testdata
	if err != nil {
		tb.Fatalf("reading %s (run the test with -update to create it): %v", path, err)
	}
	if string(got) != string(want) {
		tb.Errorf("output differs from %s (run with -update to accept it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
