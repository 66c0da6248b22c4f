package snapshotagent

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// errIntegrity means the stream's trailing hash does not match what came before it: the
// stream was cut short or damaged.
var errIntegrity = errors.New("etcd snapshot stream is incomplete or damaged: its trailing SHA-256 does not match its content")

// verifiedStream passes an etcd snapshot stream through while computing, in constant memory,
// the artifact's size and SHA-256, and checking etcd's own integrity hash: etcd appends the
// SHA-256 of the database to the stream (the last 32 bytes), and `etcdutl snapshot restore`
// refuses a file whose hash is wrong. Checking it here means a stream that broke off
// early is never stored as an artifact: at the end of the stream Read returns an error instead
// of io.EOF, and the destination discards what it wrote.
//
// One hash pass serves both sums: the database's hash is computed over every byte but the
// last 32 seen so far, and the artifact's is a copy of that state that also takes those 32.
type verifiedStream struct {
	src io.Reader
	// onData, when set, sees every byte as it passes (the revision scanner).
	onData io.Writer

	size int64
	// body hashes every byte but the last sha256.Size seen so far, which wait in tail: at the
	// end, tail is etcd's hash of the database and body's sum must equal it.
	body hash.Cloner
	tail []byte
	done bool
}

func newVerifiedStream(src io.Reader, onData io.Writer) *verifiedStream {
	return &verifiedStream{src: src, onData: onData, body: sha256.New().(hash.Cloner), tail: make([]byte, 0, 2*sha256.Size)}
}

// Read implements io.Reader.
func (s *verifiedStream) Read(p []byte) (int, error) {
	if s.done {
		return 0, io.EOF
	}
	n, err := s.src.Read(p)
	if n > 0 {
		s.consume(p[:n])
	}
	if errors.Is(err, io.EOF) {
		if !s.intact() {
			return n, snapshot.Fail(snapshot.ReasonSnapshotStreamFailed, errIntegrity)
		}
		s.done = true
		return n, io.EOF
	}
	if err != nil {
		return n, snapshot.Fail(snapshot.ReasonSnapshotStreamFailed, err)
	}
	return n, nil
}

func (s *verifiedStream) consume(data []byte) {
	s.size += int64(len(data))
	if s.onData != nil {
		_, _ = s.onData.Write(data)
	}
	// Everything but the last sha256.Size bytes of tail+data is known not to be the
	// trailing hash.
	if len(data) >= sha256.Size {
		_, _ = s.body.Write(s.tail)
		_, _ = s.body.Write(data[:len(data)-sha256.Size])
		s.tail = append(s.tail[:0], data[len(data)-sha256.Size:]...)
		return
	}
	s.tail = append(s.tail, data...)
	if extra := len(s.tail) - sha256.Size; extra > 0 {
		_, _ = s.body.Write(s.tail[:extra])
		s.tail = append(s.tail[:0], s.tail[extra:]...)
	}
}

func (s *verifiedStream) intact() bool {
	return len(s.tail) == sha256.Size && bytes.Equal(s.body.Sum(nil), s.tail)
}

// Size is the number of bytes read so far.
func (s *verifiedStream) Size() int64 { return s.size }

// Sum is the SHA-256 of the bytes read so far.
func (s *verifiedStream) Sum() [sha256.Size]byte {
	whole, err := s.body.Clone()
	if err != nil {
		// crypto/sha256 always clones (hash.Cloner); only a FIPS 140-3 v1.0.0 module
		// would not, and the agent is not built with one.
		panic(fmt.Sprintf("cloning a SHA-256 state: %v", err))
	}
	_, _ = whole.Write(s.tail)
	var out [sha256.Size]byte
	copy(out[:], whole.Sum(nil))
	return out
}
