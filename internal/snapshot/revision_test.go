package snapshot

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// The tests build streams in bbolt's page layout (go.etcd.io/bbolt, internal/common): the
// scanner's real-data check is the snapshot agent's integration test against etcd of every
// supported minor, which compares it with `etcdutl snapshot status`.

const testPageSize = 4096

type element struct {
	flags      uint32
	key, value []byte
}

type dbBuilder struct {
	order binary.ByteOrder
	pages []byte
}

func newDB(order binary.ByteOrder, rootPage uint64) *dbBuilder {
	b := &dbBuilder{order: order}
	for id := range uint64(2) {
		p := b.header(id, 0x04, 0, 0, 1)
		order.PutUint32(p[16:], bboltMagic)
		order.PutUint32(p[20:], 2)
		order.PutUint32(p[24:], testPageSize)
		order.PutUint64(p[32:], rootPage)
		b.pages = append(b.pages, p...)
	}
	return b
}

func (b *dbBuilder) header(id uint64, flags, count uint16, overflow uint32, pages int) []byte {
	p := make([]byte, pages*testPageSize)
	b.order.PutUint64(p, id)
	b.order.PutUint16(p[8:], flags)
	b.order.PutUint16(p[10:], count)
	b.order.PutUint32(p[12:], overflow)
	return p
}

func (b *dbBuilder) nextID() uint64 { return uint64(len(b.pages) / testPageSize) }

// leafBytes lays out a leaf page (or an inline bucket's page) holding elems.
func leafBytes(order binary.ByteOrder, id uint64, elems []element, pages int) []byte {
	size := pageHeaderSize + len(elems)*leafElementSize
	for _, e := range elems {
		size += len(e.key) + len(e.value)
	}
	p := make([]byte, max(size, pages*testPageSize))
	order.PutUint64(p, id)
	order.PutUint16(p[8:], leafPageFlag)
	order.PutUint16(p[10:], uint16(len(elems)))
	if pages > 0 {
		order.PutUint32(p[12:], uint32(pages-1))
	}
	data := pageHeaderSize + len(elems)*leafElementSize
	for i, e := range elems {
		at := pageHeaderSize + i*leafElementSize
		order.PutUint32(p[at:], e.flags)
		order.PutUint32(p[at+4:], uint32(data-at))
		order.PutUint32(p[at+8:], uint32(len(e.key)))
		order.PutUint32(p[at+12:], uint32(len(e.value)))
		data += copy(p[data:], e.key)
		data += copy(p[data:], e.value)
	}
	if pages == 0 {
		return p[:size]
	}
	return p
}

func (b *dbBuilder) leaf(elems []element, pages int) uint64 {
	id := b.nextID()
	b.pages = append(b.pages, leafBytes(b.order, id, elems, pages)...)
	return id
}

func (b *dbBuilder) raw(page []byte) { b.pages = append(b.pages, page...) }

func revKey(main uint64, tombstone bool) []byte {
	k := binary.BigEndian.AppendUint64(nil, main)
	k = append(k, '_')
	k = binary.BigEndian.AppendUint64(k, 0)
	if tombstone {
		k = append(k, 't')
	}
	return k
}

func revisions(from, to uint64) []element {
	var out []element
	for r := from; r <= to; r++ {
		out = append(out, element{key: revKey(r, false), value: []byte("\x0a\x03foo\x10\x01\x18\x01")})
	}
	return out
}

// bucketValue is a bucket element's value: the bucket header, then its inline page if any.
func bucketValue(order binary.ByteOrder, root uint64, inline []byte) []byte {
	v := make([]byte, bucketHeaderSize, bucketHeaderSize+len(inline))
	order.PutUint64(v, root)
	return append(v, inline...)
}

// scan feeds stream in chunks of the given sizes (cycled), as a gRPC stream delivers it.
func scan(stream []byte, chunks ...int) int64 {
	s := NewRevisionScanner()
	for i := 0; len(stream) > 0; i++ {
		n := min(len(stream), chunks[i%len(chunks)])
		_, _ = s.Write(stream[:n])
		stream = stream[n:]
	}
	return s.Revision()
}

func TestRevisionScanner(t *testing.T) {
	t.Parallel()
	le := binary.LittleEndian
	cases := map[string]struct {
		build func() []byte
		want  int64
	}{
		"key bucket in its own pages": {func() []byte {
			b := newDB(le, 2)
			b.leaf([]element{{flags: bucketLeafFlag, key: []byte("key"), value: bucketValue(le, 3, nil)}}, 1)
			b.leaf(revisions(1, 40), 1)
			b.leaf(revisions(41, 80), 1)
			return b.pages
		}, 80},
		"tombstone is the last revision": {func() []byte {
			b := newDB(le, 2)
			b.leaf(nil, 1)
			b.leaf(append(revisions(1, 9), element{key: revKey(10, true), value: []byte("\x0a\x03foo")}), 1)
			return b.pages
		}, 10},
		"a role named like a revision key is not one": {func() []byte {
			b := newDB(le, 2)
			b.leaf(nil, 1)
			b.leaf(revisions(1, 5), 1)
			name := []byte("operator_readonly") // 17 bytes, '_' at 8
			b.leaf([]element{{key: name, value: append([]byte{0x0a, byte(len(name))}, name...)}}, 1)
			return b.pages
		}, 5},
		"key bucket inline in the root page": {func() []byte {
			b := newDB(le, 2)
			inline := leafBytes(le, 0, revisions(1, 7), 0)
			b.leaf([]element{
				{flags: bucketLeafFlag, key: []byte("key"), value: bucketValue(le, 0, inline)},
				{flags: bucketLeafFlag, key: []byte("meta"), value: bucketValue(le, 0, leafBytes(le, 0, []element{{key: []byte("term"), value: []byte{1}}}, 0))},
			}, 1)
			return b.pages
		}, 7},
		"large value overflowing into later pages": {func() []byte {
			b := newDB(le, 2)
			b.leaf(nil, 1)
			elems := revisions(1, 3)
			elems[1].value = bytes.Repeat([]byte{0xAB}, 2*testPageSize) // the last key lands in the third page
			b.leaf(elems, 3)
			return b.pages
		}, 3},
		"garbage page and a stale run": {func() []byte {
			b := newDB(le, 2)
			b.leaf(nil, 1)
			garbage := b.header(999, leafPageFlag, 1, 0, 1) // id does not match its place
			copy(garbage[pageHeaderSize:], leafBytes(le, 0, revisions(1<<40, 1<<40), 0)[pageHeaderSize:])
			b.raw(garbage)
			b.leaf(revisions(1, 12), 1)
			return b.pages
		}, 12},
		"not bbolt": {func() []byte { return bytes.Repeat([]byte{0x5A}, 3*testPageSize) }, 0},
		"big-endian file": {func() []byte {
			be := binary.BigEndian
			b := newDB(be, 2)
			b.leaf(nil, 1)
			b.leaf(revisions(100, 130), 1)
			return b.pages
		}, 130},
	}
	for name, c := range cases {
		stream := append(c.build(), bytes.Repeat([]byte{0xEE}, 32)...) // etcd's trailing hash
		for _, chunks := range [][]int{{len(stream)}, {1}, {32 * 1024}, {7, 4096, 13}, {testPageSize}} {
			if got := scan(stream, chunks...); got != c.want {
				t.Errorf("%s, chunks %v: revision %d, want %d", name, chunks, got, c.want)
			}
		}
	}
}

// FuzzRevisionScanner: the scanner reads untrusted bytes. It never panics, and its answer does
// not depend on how the stream is cut into writes.
func FuzzRevisionScanner(f *testing.F) {
	b := newDB(binary.LittleEndian, 2)
	b.leaf(nil, 1)
	b.leaf(revisions(1, 20), 1)
	f.Add(b.pages[:3*testPageSize+200], uint64(1))
	f.Add(b.pages, uint64(7))
	f.Fuzz(func(t *testing.T, stream []byte, seed uint64) {
		whole := scan(stream, len(stream)+1)
		rnd := rand.New(rand.NewPCG(seed, seed)) //nolint:gosec // G404: seeded on purpose, so a failing input reproduces.
		chunks := make([]int, 16)
		for i := range chunks {
			chunks[i] = 1 + rnd.IntN(3*testPageSize)
		}
		if got := scan(stream, chunks...); got != whole {
			t.Fatalf("chunked %v: %d, whole: %d", chunks, got, whole)
		}
	})
}
