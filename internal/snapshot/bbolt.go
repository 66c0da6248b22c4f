package snapshot

import "encoding/binary"

// bbolt's on-disk layout (go.etcd.io/bbolt, internal/common/page.go, types.go, meta.go): a page
// starts with its id, flags, element count and overflow (the number of extra pages it spans);
// leaf elements are {flags, pos, ksize, vsize} and branch elements {pos, ksize, pgid}, each 16
// bytes, with pos counted from the element itself; a bucket's value is {root pgid, sequence},
// followed by the bucket's own page when root is 0 (an inline bucket). Integers are in the
// writing machine's byte order, told apart by the meta page's magic number.
const (
	bboltMagic        = 0xED0CDAED
	pageHeaderSize    = 16
	elementSize       = 16
	bucketHeaderSize  = 16
	branchPageFlag    = 0x01
	leafPageFlag      = 0x02
	bucketLeafFlag    = 0x01
	metaOffsetMagic   = pageHeaderSize
	metaOffsetPage    = pageHeaderSize + 8
	metaOffsetRoot    = pageHeaderSize + 16
	metaBytesNeeded   = pageHeaderSize + 24
	minBboltPageSize  = 512
	maxBboltPageSize  = 1 << 20
	maxRootPageBytes  = 1 << 20
	maxCaptures       = 1024
	maxValuePrefixLen = 2 + tombstoneKeySize
)

// pageStream follows a bbolt file as it streams past and reports, per page, what the revision
// scanner needs: the last child of branch pages, the last element of leaf pages, and the whole
// root bucket page. It keeps only the byte ranges it waits for (captures), a few bytes each.
type pageStream struct {
	onBranch   func(page, lastChild uint64)
	onLeafLast func(page uint64, key, valuePrefix []byte)
	onRootPage func(page []byte)

	offset   int64
	order    binary.ByteOrder
	pageSize int64
	rootPage uint64
	meta     []byte
	captures []*capture
	// notBbolt is set when the stream does not start with a bbolt meta page.
	notBbolt bool
}

// capture collects the bytes [start, start+len(buf)) of the stream and hands them to done.
type capture struct {
	start  int64
	buf    []byte
	filled int
	done   func(data []byte)
}

func (s *pageStream) write(p []byte) {
	for len(p) > 0 && !s.notBbolt {
		if s.pageSize == 0 {
			p = s.readMeta(p)
			continue
		}
		// Cut at page boundaries, so that each page's start is seen once.
		next := (s.offset/s.pageSize + 1) * s.pageSize
		chunk := p[:min(int64(len(p)), next-s.offset)]
		if s.offset%s.pageSize == 0 {
			s.watchPage(uint64(s.offset / s.pageSize)) //nolint:gosec // G115: offsets are never negative.
		}
		s.feed(chunk)
		s.offset += int64(len(chunk))
		p = p[len(chunk):]
	}
}

// readMeta collects the first meta page's header, which names the page size, the byte order
// and the root bucket's page (bbolt writes the copying transaction's meta into both meta
// pages). A stream that does not start with a bbolt meta page is ignored.
func (s *pageStream) readMeta(p []byte) []byte {
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
	if s.order == nil {
		s.notBbolt = true
		return nil
	}
	size := int64(s.order.Uint32(s.meta[metaOffsetPage:]))
	if size < minBboltPageSize || size > maxBboltPageSize {
		s.notBbolt = true
		return nil
	}
	s.pageSize = size
	s.rootPage = s.order.Uint64(s.meta[metaOffsetRoot:])
	return p
}

// feed hands chunk, which starts at s.offset, to the captures that need its bytes. A capture
// that completes may register another within the same chunk (a page header names its last
// element, the element its key), so feed goes round until none completes. A capture registered
// by another starts at or after the end of the one that registered it, so its bytes are still
// to come; one that does not (garbage positions) is dropped.
func (s *pageStream) feed(chunk []byte) {
	end := s.offset + int64(len(chunk))
	for progress := true; progress; {
		progress = false
		pending := s.captures
		s.captures = nil // callbacks register new captures here
		kept := make([]*capture, 0, len(pending))
		for _, c := range pending {
			need := c.start + int64(c.filled)
			if need < s.offset {
				continue
			}
			if hi := min(c.start+int64(len(c.buf)), end); need < hi {
				c.filled += copy(c.buf[c.filled:], chunk[need-s.offset:hi-s.offset])
			}
			if c.filled < len(c.buf) {
				kept = append(kept, c)
				continue
			}
			c.done(c.buf)
			progress = true
		}
		s.captures = append(kept, s.captures...)
	}
	if len(s.captures) > maxCaptures {
		// Only garbage registers this many at once.
		s.captures = s.captures[:maxCaptures]
	}
}

func (s *pageStream) watch(start int64, size int, done func([]byte)) {
	if size > 0 {
		s.captures = append(s.captures, &capture{start: start, buf: make([]byte, size), done: done})
	}
}

// watchPage starts reading the page that begins at page index id.
func (s *pageStream) watchPage(id uint64) {
	start := int64(id) * s.pageSize //nolint:gosec // G115: id comes from a non-negative offset.
	s.watch(start, pageHeaderSize, func(hdr []byte) {
		if s.order.Uint64(hdr) != id {
			return // not a page start: the continuation of an earlier page's overflow
		}
		flags, count, overflow := s.order.Uint16(hdr[8:]), int64(s.order.Uint16(hdr[10:])), int64(s.order.Uint32(hdr[12:]))
		run := (overflow + 1) * s.pageSize
		switch {
		case count == 0:
		case id == s.rootPage && flags&leafPageFlag != 0:
			s.watchRootPage(start, run, hdr)
		case flags&leafPageFlag != 0:
			s.watchLastLeafElement(id, start, run, count)
		case flags&branchPageFlag != 0:
			s.watchLastBranchElement(id, start, run, count)
		}
	})
}

// watchRootPage collects the rest of the root bucket's page, whose header has gone by.
func (s *pageStream) watchRootPage(start, run int64, hdr []byte) {
	if run > maxRootPageBytes {
		return
	}
	header := append([]byte(nil), hdr...)
	s.watch(start+pageHeaderSize, int(run)-pageHeaderSize, func(rest []byte) {
		s.onRootPage(append(header, rest...))
	})
}

// lastElement is where the last element of a page of count elements starts, if it lies within
// the page's run.
func lastElement(start, run, count int64) (int64, bool) {
	elem := start + pageHeaderSize + (count-1)*elementSize
	return elem, elem+elementSize <= start+run
}

func (s *pageStream) watchLastBranchElement(id uint64, start, run, count int64) {
	if elem, ok := lastElement(start, run, count); ok {
		s.watch(elem, elementSize, func(e []byte) { s.onBranch(id, s.order.Uint64(e[8:])) })
	}
}

func (s *pageStream) watchLastLeafElement(id uint64, start, run, count int64) {
	elem, ok := lastElement(start, run, count)
	if !ok {
		return
	}
	s.watch(elem, elementSize, func(e []byte) {
		pos, ksize, vsize := int64(s.order.Uint32(e[4:])), int64(s.order.Uint32(e[8:])), int64(s.order.Uint32(e[12:]))
		// The key follows every element header, so a real last element's pos is at least one
		// element's size; and only revision-shaped keys matter.
		if (ksize != revisionKeySize && ksize != tombstoneKeySize) || pos < elementSize {
			return
		}
		want := ksize + min(vsize, maxValuePrefixLen)
		if elem+pos+want > start+run {
			return
		}
		s.watch(elem+pos, int(want), func(kv []byte) { s.onLeafLast(id, kv[:ksize], kv[ksize:]) })
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
		at := pageHeaderSize + i*elementSize
		if at+elementSize > len(page) {
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
