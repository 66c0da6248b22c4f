package snapshotagent

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

func TestVerifiedStreamPassesAnIntactStream(t *testing.T) {
	t.Parallel()
	stream := streamOf(100_000, 1)
	for name, r := range map[string]io.Reader{
		"whole":        bytes.NewReader(stream),
		"byte by byte": iotest.OneByteReader(bytes.NewReader(stream)),
		"half reads":   iotest.HalfReader(bytes.NewReader(stream)),
	} {
		var copied bytes.Buffer
		s := newVerifiedStream(r, nil)
		if _, err := io.Copy(&copied, s); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(copied.Bytes(), stream) || s.Size() != int64(len(stream)) || s.Sum() != sha256.Sum256(stream) {
			t.Errorf("%s: size %d sum %x; want the stream unchanged", name, s.Size(), s.Sum())
		}
	}
}

func TestVerifiedStreamRefusesDamage(t *testing.T) {
	t.Parallel()
	stream := streamOf(10_000, 2)
	flipped := bytes.Clone(stream)
	flipped[5000] ^= 0x01
	cases := map[string][]byte{
		"cut short":              stream[:len(stream)-1],
		"cut at a chunk edge":    stream[:8192],
		"a flipped byte":         flipped,
		"shorter than a hash":    stream[:20],
		"empty":                  nil,
		"hash of something else": append(bytes.Clone(stream[:len(stream)-sha256.Size]), make([]byte, sha256.Size)...),
	}
	for name, data := range cases {
		_, err := io.Copy(io.Discard, newVerifiedStream(iotest.HalfReader(bytes.NewReader(data)), nil))
		if !errors.Is(err, errIntegrity) || snapshot.ReasonOf(err) != snapshot.ReasonSnapshotStreamFailed {
			t.Errorf("%s: %v, want an integrity failure", name, err)
		}
	}
	_, err := io.Copy(io.Discard, newVerifiedStream(io.MultiReader(bytes.NewReader(stream[:100]), errReader{errInjected}), nil))
	if !errors.Is(err, errInjected) || snapshot.ReasonOf(err) != snapshot.ReasonSnapshotStreamFailed {
		t.Errorf("broken stream: %v, want the stream's error as SnapshotStreamFailed", err)
	}
}

// TestVerifiedStreamFeedsTheScanner: the scanner sees every byte once.
func TestVerifiedStreamFeedsTheScanner(t *testing.T) {
	t.Parallel()
	stream := streamOf(50_000, 3)
	var seen bytes.Buffer
	if _, err := io.Copy(io.Discard, newVerifiedStream(iotest.HalfReader(bytes.NewReader(stream)), &seen)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(seen.Bytes(), stream) {
		t.Errorf("the scanner saw %d bytes, want the %d of the stream", seen.Len(), len(stream))
	}
}
