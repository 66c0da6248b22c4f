package agentio

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/etcd-operator/etcd-operator/internal/agentenv"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// FSFailure classifies a file-system error, prefixed with what was being done: a full volume or
// quota is NoSpace, a refused permission or a read-only volume AccessDenied, anything else
// StoreFailed.
func FSFailure(doing string, err error) error {
	reason := snapshot.ReasonStoreFailed
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		reason = snapshot.ReasonNoSpace
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		reason = snapshot.ReasonAccessDenied
	}
	return snapshot.Failf(reason, "%s: %w", doing, err)
}

// FreeBytes is the space available to an unprivileged writer in dir's file system.
func FreeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return int64(st.Bavail) * st.Bsize, nil //nolint:gosec // G115: block counts of a real volume are far below 2^63 bytes.
}

// ReadCAPool reads a PEM bundle named by the variable env.
func ReadCAPool(file, env string) (*x509.CertPool, []byte, error) {
	pem, err := os.ReadFile(file) //nolint:gosec // G304: a CA bundle the Pod mounts and names
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", env, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, nil, fmt.Errorf("%s holds no PEM certificate", env)
	}
	return pool, pem, nil
}

// ReadCredential returns a credential's value, reading its file when it is given as one; env
// names the file's variable in errors, which are InvalidConfig failures.
// Trailing newlines of a file are dropped (editors and `echo` add them; Secrets created with
// kubectl --from-file keep them). A missing optional file yields "".
func ReadCredential(c agentenv.Credential, env string, optional bool) (string, error) {
	if c.File == "" {
		return string(c.Value), nil
	}
	data, err := os.ReadFile(c.File)
	if optional && errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", snapshot.Failf(snapshot.ReasonInvalidConfig, "reading %s: %w", env, err)
	}
	return trimNewlines(string(data)), nil
}

func trimNewlines(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}
