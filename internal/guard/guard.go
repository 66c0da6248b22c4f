package guard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// RefusalPrefix starts every refusal the guard prints. The EtcdMember controller's failure
// classifier (internal/health) matches it in the container's termination message.
const RefusalPrefix = "etcd-guard: refusing to start etcd: "

// Why the guard expects data in the data dir. The reason is part of the refusal, so a person
// reading the termination message knows which of the two facts the guard went by.
const (
	// ExpectedByOperator: the Pod was built with --data-expected, because the member had run
	// with this data dir before the Pod was created (it reported a version or was a voter).
	ExpectedByOperator = "the operator recorded that this member ran with it before this Pod was created"
	// ExpectedByPod: an earlier start of etcd in this same Pod wrote the data dir's WAL.
	ExpectedByPod = "an earlier start of etcd in this Pod wrote it"
)

// DataLostError is the refusal: the data dir holds no write-ahead log although the member has
// written one there before. Starting etcd would let the member rejoin under its old identity with
// an empty log, which raft does not allow a voter to do.
type DataLostError struct {
	DataDir string
	Reason  string
}

func (e *DataLostError) Error() string {
	return fmt.Sprintf("%sthe data dir %s holds no write-ahead log, but %s; the member's data was lost and the operator replaces the member",
		RefusalPrefix, e.DataDir, e.Reason)
}

// HasData reports whether dataDir holds etcd's write-ahead log, the one part of the data dir
// without which etcd treats the member as brand new (etcd's wal.Exist: a .wal file in
// member/wal). A missing directory is no data, not an error.
func HasData(dataDir string) (bool, error) {
	entries, err := os.ReadDir(filepath.Join(dataDir, "member", "wal"))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the data dir %s: %w", dataDir, err)
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".wal") {
			return true, nil
		}
	}
	return false, nil
}

// Check decides whether etcd may start on dataDir. It refuses with a *DataLostError when the
// data dir holds no WAL but data was expected: by the operator (dataExpected) or by an earlier
// start in this Pod (a marker file exists). With data present or none expected it returns nil:
// a first start creates the data dir.
func Check(dataDir, marker string, dataExpected bool) error {
	has, err := HasData(dataDir)
	if err != nil || has {
		return err
	}
	if dataExpected {
		return &DataLostError{DataDir: dataDir, Reason: ExpectedByOperator}
	}
	if _, err := os.Stat(marker); err == nil {
		return &DataLostError{DataDir: dataDir, Reason: ExpectedByPod}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading the marker %s: %w", marker, err)
	}
	return nil
}

// MarkSeen records in the Pod's guard volume that this Pod has seen the data dir hold data. It
// lives outside the data volume on purpose: whatever empties the data dir leaves it in place.
func MarkSeen(marker, dataDir string) error {
	if err := os.WriteFile(marker, []byte(dataDir+"\n"), 0o600); err != nil {
		return fmt.Errorf("writing the marker %s: %w", marker, err)
	}
	return nil
}

// Install copies the running executable to dest, in an existing directory (the shared volume), so that a container whose image lacks the
// guard (etcd's images are distroless) can run it from a shared volume. The copy is written
// beside dest and renamed, so a crash never leaves a truncated executable.
func Install(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locating the guard executable: %w", err)
	}
	data, err := os.ReadFile(self) //nolint:gosec // the guard's own executable
	if err != nil {
		return fmt.Errorf("reading %s: %w", self, err)
	}
	tmp := dest + ".tmp"
	if err := os.WriteFile(tmp, data, 0o755); err != nil { //nolint:gosec // an executable: the etcd container runs it
		return fmt.Errorf("installing the guard: %w", err)
	}
	if err := os.Rename(tmp, dest); err != nil { //nolint:gosec // dest is the Pod spec's own install path
		return fmt.Errorf("installing the guard: %w", err)
	}
	return nil
}
