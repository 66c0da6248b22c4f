package snapshotagent

import (
	"bytes"
	"io"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// BenchmarkVerifiedStream measures the agent's per-byte work (hashing, the integrity check and
// the revision scanner) on a 64 MiB stream, as io.Copy drives it.
func BenchmarkVerifiedStream(b *testing.B) {
	stream := streamOf(64<<20, 11)
	for _, withScanner := range []bool{false, true} {
		name := "hash only"
		if withScanner {
			name = "hash and scanner"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			for b.Loop() {
				var scanner io.Writer
				if withScanner {
					scanner = snapshot.NewRevisionScanner()
				}
				if _, err := io.Copy(io.Discard, newVerifiedStream(bytes.NewReader(stream), scanner)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
