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
	size := pageHeaderSize + len(elems)*elementSize
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
	data := pageHeaderSize + len(elems)*elementSize
	for i, e := range elems {
		at := pageHeaderSize + i*elementSize
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

// branch adds a branch page whose elements point at children.
func (b *dbBuilder) branch(children ...uint64) uint64 {
	id := b.nextID()
	p := b.header(id, branchPageFlag, uint16(len(children)), 0, 1)
	data := pageHeaderSize + len(children)*elementSize
	for i, child := range children {
		at := pageHeaderSize + i*elementSize
		key := revKey(uint64(i+1), false)
		b.order.PutUint32(p[at:], uint32(data-at))
		b.order.PutUint32(p[at+4:], uint32(len(key)))
		b.order.PutUint64(p[at+8:], child)
		data += copy(p[data:], key)
	}
	b.pages = append(b.pages, p...)
	return id
}

// rootPage adds the root bucket's page, holding the key bucket (at keyRoot, or inline) and the
// other buckets given.
func (b *dbBuilder) rootPage(keyRoot uint64, inline []byte, others ...element) uint64 {
	elems := append([]element{{flags: bucketLeafFlag, key: []byte("key"), value: bucketValue(b.order, keyRoot, inline)}}, others...)
	return b.leaf(elems, 1)
}

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

type revisionCase struct {
	build func() []byte
	want  int64
}

// revisionCases are bbolt layouts the scanner must read, and the revision each holds.
func revisionCases() map[string]revisionCase {
	le := binary.LittleEndian
	return map[string]revisionCase{
		"key bucket of one leaf": {func() []byte {
			b := newDB(le, 2)
			b.rootPage(3, nil)
			b.leaf(revisions(1, 40), 1)
			return b.pages
		}, 40},
		"leaves before their branch": {func() []byte {
			b := newDB(le, 2)
			b.rootPage(5, nil)
			b.leaf(revisions(1, 40), 1)  // 3
			b.leaf(revisions(41, 80), 1) // 4
			b.branch(3, 4)               // 5
			return b.pages
		}, 80},
		"branch before its leaves, two levels": {func() []byte {
			b := newDB(le, 2)
			b.rootPage(3, nil)
			b.branch(5, 4)               // 3: root of the key bucket
			b.branch(6, 7)               // 4: its rightmost child
			b.leaf(revisions(1, 40), 1)  // 5
			b.leaf(revisions(41, 60), 1) // 6
			b.leaf(revisions(61, 70), 1) // 7: the rightmost leaf
			return b.pages
		}, 70},
		// Free pages reused by writes committed during the copy hold newer revisions than
		// the snapshot's; they are on no path of the tree.
		"newer revisions in free pages": {func() []byte {
			b := newDB(le, 2)
			b.rootPage(4, nil)
			b.leaf(revisions(500, 520), 1) // 3: free, reused during the copy
			b.leaf(revisions(1, 50), 1)    // 4: the key bucket
			b.leaf(revisions(600, 610), 1) // 5: free as well
			return b.pages
		}, 50},
		"tombstone is the last revision": {func() []byte {
			b := newDB(le, 2)
			b.rootPage(3, nil)
			b.leaf(append(revisions(1, 9), element{key: revKey(10, true), value: []byte("\x0a\x03foo")}), 1)
			return b.pages
		}, 10},
		"key bucket inline in the root page": {func() []byte {
			b := newDB(le, 2)
			b.rootPage(0, leafBytes(le, 0, revisions(1, 7), 0),
				element{flags: bucketLeafFlag, key: []byte("meta"), value: bucketValue(le, 0, leafBytes(le, 0, []element{{key: []byte("term"), value: []byte{1}}}, 0))})
			return b.pages
		}, 7},
		"a role named like a revision key in an inline bucket": {func() []byte {
			b := newDB(le, 2)
			name := []byte("operator_readonly") // 17 bytes, '_' at 8
			role := element{key: name, value: append([]byte{0x0a, byte(len(name))}, name...)}
			b.rootPage(0, leafBytes(le, 0, append(revisions(1, 5), role), 0))
			return b.pages
		}, 5},
		"large value overflowing into later pages": {func() []byte {
			b := newDB(le, 2)
			b.rootPage(3, nil)
			elems := revisions(1, 3)
			elems[1].value = bytes.Repeat([]byte{0xAB}, 2*testPageSize) // the last key lands in the third page
			b.leaf(elems, 3)
			return b.pages
		}, 3},
		"garbage page where a page should start": {func() []byte {
			b := newDB(le, 2)
			b.rootPage(4, nil)
			garbage := b.header(999, branchPageFlag, 1, 0, 1) // its id does not match its place
			b.raw(garbage)
			b.leaf(revisions(1, 12), 1)
			return b.pages
		}, 12},
		"no root page": {func() []byte {
			b := newDB(le, 7)
			b.leaf(revisions(1, 12), 1)
			return b.pages
		}, 0},
		"not bbolt": {func() []byte { return bytes.Repeat([]byte{0x5A}, 3*testPageSize) }, 0},
		"big-endian file": {func() []byte {
			be := binary.BigEndian
			b := newDB(be, 2)
			b.rootPage(3, nil)
			b.leaf(revisions(100, 130), 1)
			return b.pages
		}, 130},
	}
}

func TestRevisionScanner(t *testing.T) {
	t.Parallel()
	for name, c := range revisionCases() {
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
	b.rootPage(4, nil)
	b.leaf(revisions(1, 20), 1)
	b.branch(3)
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

// BenchmarkRevisionScanner measures the scanner on 64 MiB of leaf pages, in the gRPC stream's
// 32 KiB chunks.
func BenchmarkRevisionScanner(b *testing.B) {
	db := newDB(binary.LittleEndian, 2)
	db.rootPage(3, nil)
	for i := range uint64(16 << 10) {
		db.leaf(revisions(i*40+1, i*40+40), 1)
	}
	b.SetBytes(int64(len(db.pages)))
	b.ReportAllocs()
	for b.Loop() {
		scan(db.pages, 32<<10)
	}
}
