package snapshot

import (
	"bytes"
	"encoding/binary"
	"math"
)

// RevisionScanner reads, from a snapshot as it streams past, the highest revision stored in
// etcd's "key" bucket: the revision `etcdutl snapshot status` reports and a restored cluster
// continues from. etcd's Snapshot response carries no revision, and the serving member's
// revision read just before and just after the stream opened only brackets it while writes go
// on; reading it from the data makes it exact without holding the snapshot anywhere.
//
// A snapshot is a bbolt file (https://github.com/etcd-io/bbolt, "Caveats & Limitations" and
// its page layout in internal/common), streamed in page order: two meta pages, then every page
// up to the high-water mark, free ones included. Within a leaf page keys are sorted, so the
// last element of every leaf page is that page's maximum; the key bucket's maximum is the
// greatest such last key shaped like a revision (8-byte big-endian main revision, '_', 8-byte
// sub revision, and 't' for a tombstone). Free pages hold only data of earlier transactions,
// whose revisions are lower. Buckets small enough to be stored inline in the root page (the
// key bucket of a nearly empty cluster) are read from the root page itself.
//
// The scanner holds a few small buffers whatever the snapshot's size. Whatever it reads is a
// claim about untrusted bytes, so the agent keeps its answer within the revisions the member
// reported around the stream's start.
type RevisionScanner struct {
	offset   int64
	order    binary.ByteOrder
	pageSize int64
	rootPage uint64
	maxRev   int64
	meta     []byte
	captures []*capture
	// notBbolt is set when the stream does not start with a bbolt meta page.
	notBbolt bool
}

// bbolt's on-disk constants (go.etcd.io/bbolt, internal/common/page.go and types.go).
const (
	bboltMagic        = 0xED0CDAED
	pageHeaderSize    = 16
	leafElementSize   = 16
	bucketHeaderSize  = 16
	leafPageFlag      = 0x02
	bucketLeafFlag    = 0x01
	metaOffsetMagic   = pageHeaderSize
	metaOffsetPage    = pageHeaderSize + 8
	metaOffsetRoot    = pageHeaderSize + 16
	metaBytesNeeded   = pageHeaderSize + 24
	revisionKeySize   = 17
	tombstoneKeySize  = 18
	maxRootPageBytes  = 1 << 20
	maxCaptures       = 1024
	minBboltPageSize  = 512
	maxBboltPageSize  = 1 << 20
	revisionSeparator = '_'
	tombstoneMark     = 't'
)

// capture collects the bytes [start, start+len(buf)) of the stream and hands them to done.
type capture struct {
	start  int64
	buf    []byte
	filled int
	done   func(s *RevisionScanner, data []byte)
}

// NewRevisionScanner returns a scanner that has seen nothing yet.
func NewRevisionScanner() *RevisionScanner {
	return &RevisionScanner{}
}

// Revision is the highest revision seen so far, 0 when none (or when the stream is not a bbolt
// file).
func (s *RevisionScanner) Revision() int64 { return s.maxRev }

// Write implements io.Writer; it never fails, so it can sit in an io.MultiWriter.
func (s *RevisionScanner) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && !s.notBbolt {
		if s.pageSize == 0 {
			p = s.readMeta(p)
			continue
		}
		// Consume up to the next page boundary, so that each page start is seen once.
		next := (s.offset/s.pageSize + 1) * s.pageSize
		chunk := p[:min(int64(len(p)), next-s.offset)]
		if s.offset%s.pageSize == 0 {
			s.watchPage(s.offset / s.pageSize)
		}
		s.feed(chunk)
		s.offset += int64(len(chunk))
		p = p[len(chunk):]
	}
	return n, nil
}

// readMeta collects the first meta page's header, which names the page size, the byte order
// and the root bucket's page. A stream whose start is no bbolt meta page is ignored.
func (s *RevisionScanner) readMeta(p []byte) []byte {
	take := min(len(p), metaBytesNeeded-len(s.meta))
	s.meta = append(s.meta, p[:take]...)
	s.offset += int64(take)
	p = p[take:]
	if len(s.meta) < metaBytesNeeded {
		return p
	}
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		if order.Uint32(s.meta[metaOffsetMagic:]) == bboltMagic {
			s.order = order
		}
	}
	size := int64(0)
	if s.order != nil {
		size = int64(s.order.Uint32(s.meta[metaOffsetPage:]))
	}
	if size < minBboltPageSize || size > maxBboltPageSize {
		s.notBbolt = true
		return nil
	}
	s.pageSize = size
	s.rootPage = s.order.Uint64(s.meta[metaOffsetRoot:])
	return p
}

// feed hands chunk, which starts at s.offset, to the captures that need its bytes. A capture
// that completes may register another one within the same chunk (a page header names its last
// element, the element its key), so feed goes round until no capture completes. A capture
// registered by another starts at or after the end of the one that registered it, so its
// bytes are still to come.
func (s *RevisionScanner) feed(chunk []byte) {
	end := s.offset + int64(len(chunk))
	for progress := true; progress; {
		progress = false
		pending := s.captures
		s.captures = nil // callbacks register new captures here
		kept := make([]*capture, 0, len(pending))
		for _, c := range pending {
			need := c.start + int64(c.filled)
			if need < s.offset {
				continue // its bytes went by before it was registered: garbage positions
			}
			if hi := min(c.start+int64(len(c.buf)), end); need < hi {
				c.filled += copy(c.buf[c.filled:], chunk[need-s.offset:hi-s.offset])
			}
			if c.filled < len(c.buf) {
				kept = append(kept, c)
				continue
			}
			c.done(s, c.buf)
			progress = true
		}
		s.captures = append(kept, s.captures...)
	}
	if len(s.captures) > maxCaptures {
		// Only garbage in free pages registers this many; dropping the newest loses nothing
		// the agent's bounds do not cover.
		s.captures = s.captures[:maxCaptures]
	}
}

func (s *RevisionScanner) watch(start int64, size int, done func(*RevisionScanner, []byte)) {
	if size > 0 {
		s.captures = append(s.captures, &capture{start: start, buf: make([]byte, size), done: done})
	}
}

// watchPage starts reading the page that begins at page index id.
func (s *RevisionScanner) watchPage(id int64) {
	start := id * s.pageSize
	s.watch(start, pageHeaderSize, func(s *RevisionScanner, hdr []byte) {
		if s.order.Uint64(hdr[0:]) != uint64(id) { //nolint:gosec // G115: id is a non-negative page index.
			return // not a page start: the continuation of an earlier page's overflow
		}
		flags, count, overflow := s.order.Uint16(hdr[8:]), int64(s.order.Uint16(hdr[10:])), int64(s.order.Uint32(hdr[12:]))
		if flags&leafPageFlag == 0 || count == 0 {
			return
		}
		run := (overflow + 1) * s.pageSize
		if uint64(id) == s.rootPage { //nolint:gosec // G115: as above.
			// The header has gone by; the rest of the page follows it.
			if run <= maxRootPageBytes {
				header := append([]byte(nil), hdr...)
				s.watch(start+pageHeaderSize, int(run)-pageHeaderSize, func(s *RevisionScanner, rest []byte) {
					s.readRootPage(append(header, rest...))
				})
			}
			return
		}
		s.watchLastElement(start, run, count)
	})
}

// watchLastElement reads the last element of the leaf page at start, of run bytes.
func (s *RevisionScanner) watchLastElement(start, run, count int64) {
	elem := start + pageHeaderSize + (count-1)*leafElementSize
	if elem+leafElementSize > start+run {
		return
	}
	s.watch(elem, leafElementSize, func(s *RevisionScanner, e []byte) {
		pos, ksize, vsize := int64(s.order.Uint32(e[4:])), int64(s.order.Uint32(e[8:])), int64(s.order.Uint32(e[12:]))
		// The key follows every element header, so a real last element's pos is at least
		// one element's size; anything else is garbage.
		if (ksize != revisionKeySize && ksize != tombstoneKeySize) || pos < leafElementSize {
			return
		}
		want := ksize + min(vsize, 2+ksize)
		if elem+pos+want > start+run {
			return
		}
		s.watch(elem+pos, int(want), func(s *RevisionScanner, kv []byte) {
			s.offer(kv[:ksize], kv[ksize:])
		})
	})
}

// readRootPage looks into the buckets stored inline in the root bucket's page: a bucket whose
// header names no page of its own carries its page right after the header.
func (s *RevisionScanner) readRootPage(page []byte) {
	forEachLeafElement(s.order, page, func(flags uint32, _, value []byte) {
		if flags&bucketLeafFlag == 0 || len(value) < bucketHeaderSize+pageHeaderSize || s.order.Uint64(value) != 0 {
			return
		}
		inline := value[bucketHeaderSize:]
		var lastKey, lastValue []byte
		forEachLeafElement(s.order, inline, func(_ uint32, k, v []byte) { lastKey, lastValue = k, v })
		if lastKey != nil {
			s.offer(lastKey, lastValue)
		}
	})
}

// forEachLeafElement calls f for every element of the leaf page in page whose key and value
// lie within page.
func forEachLeafElement(order binary.ByteOrder, page []byte, f func(flags uint32, key, value []byte)) {
	if len(page) < pageHeaderSize || order.Uint16(page[8:])&leafPageFlag == 0 {
		return
	}
	count := int(order.Uint16(page[10:]))
	for i := range count {
		at := pageHeaderSize + i*leafElementSize
		if at+leafElementSize > len(page) {
			return
		}
		e := page[at:]
		flags, pos, ksize, vsize := order.Uint32(e), int(order.Uint32(e[4:])), int(order.Uint32(e[8:])), int(order.Uint32(e[12:]))
		k := at + pos
		if pos < 0 || ksize < 0 || vsize < 0 || k+ksize+vsize > len(page) || k+ksize+vsize < k {
			return
		}
		f(flags, page[k:k+ksize], page[k+ksize:k+ksize+vsize])
	}
}

// offer considers one key as the key bucket's maximum. valuePrefix is the start of its value:
// the auth buckets store a user's or role's name as the first field of the value, so a name
// that happens to look like a revision key ("operator_readonly") is recognised and skipped.
func (s *RevisionScanner) offer(key, valuePrefix []byte) {
	rev, ok := parseRevisionKey(key)
	if !ok {
		return
	}
	if len(valuePrefix) >= 2+len(key) && valuePrefix[0] == 0x0a && int(valuePrefix[1]) == len(key) && bytes.Equal(valuePrefix[2:2+len(key)], key) {
		return
	}
	s.maxRev = max(s.maxRev, rev)
}

// parseRevisionKey reads the main revision of a key of etcd's key bucket.
func parseRevisionKey(key []byte) (int64, bool) {
	switch {
	case len(key) == tombstoneKeySize && key[tombstoneKeySize-1] != tombstoneMark,
		len(key) != revisionKeySize && len(key) != tombstoneKeySize,
		key[8] != revisionSeparator:
		return 0, false
	}
	main := binary.BigEndian.Uint64(key[:8])
	if main == 0 || main > math.MaxInt64 {
		return 0, false
	}
	return int64(main), true
}
