package save

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
)

// errDamaged means the stream's trailing SHA-256 does not match what came before it: etcd ends
// every snapshot stream with the hash of the database, which `etcdutl snapshot restore` checks,
// so a stream cut short would be a file that cannot be restored.
var errDamaged = errors.New("the snapshot stream is incomplete or damaged: its trailing SHA-256 does not match its content")

// writeSnapshot writes src to path through a temporary file in path's folder, checks etcd's
// trailing hash, syncs, renames, and then writes path.sha256 the same way. It returns the size
// and the SHA-256 of the whole file (hex), as sha256sum computes it.
func writeSnapshot(path string, src io.Reader) (int64, string, error) {
	v := &verifier{whole: sha256.New(), body: sha256.New()}
	n, err := writeAtomically(path, func(w io.Writer) error {
		_, err := io.Copy(io.MultiWriter(w, v), src)
		if err == nil && !v.intact() {
			err = errDamaged
		}
		return err
	})
	if err != nil {
		return 0, "", err
	}
	digest := hex.EncodeToString(v.whole.Sum(nil))
	// sha256sum's format, with the bare name, so that `sha256sum -c` works in the folder.
	line := fmt.Sprintf("%s  %s\n", digest, filepath.Base(path))
	if _, err := writeAtomically(path+".sha256", func(w io.Writer) error {
		_, err := io.WriteString(w, line)
		return err
	}); err != nil {
		return 0, "", err
	}
	return n, digest, nil
}

// writeAtomically has fill write a temporary file next to path, syncs it and renames it over
// path, so that path is either complete or as it was; the temporary file is removed on failure.
// It returns the bytes written.
func writeAtomically(path string, fill func(io.Writer) error) (int64, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	// CreateTemp makes the file 0600: a snapshot holds every key of the cluster.
	f, err := os.CreateTemp(dir, "."+base+".part-*")
	if err != nil {
		return 0, fmt.Errorf("creating a temporary file next to %s: %w", path, err)
	}
	cw := &countingWriter{w: f}
	err = fill(cw)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return 0, err
	}
	syncDir(dir)
	return cw.n, nil
}

// syncDir makes the rename durable where the platform allows it; Windows cannot sync a folder,
// and the file's own data is synced already, so a failure only risks the name, not the bytes.
func syncDir(dir string) {
	d, err := os.Open(dir) //nolint:gosec // G304: the folder of the file the person named
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// verifier hashes the whole stream, and separately every byte but the last sha256.Size, which
// wait in tail: at the end, tail must be etcd's hash of the rest.
type verifier struct {
	whole, body hash.Hash
	tail        []byte
}

func (v *verifier) Write(p []byte) (int, error) {
	_, _ = v.whole.Write(p)
	v.tail = append(v.tail, p...)
	if extra := len(v.tail) - sha256.Size; extra > 0 {
		_, _ = v.body.Write(v.tail[:extra])
		v.tail = append(v.tail[:0], v.tail[extra:]...)
	}
	return len(p), nil
}

func (v *verifier) intact() bool {
	return len(v.tail) == sha256.Size && bytes.Equal(v.body.Sum(nil), v.tail)
}
