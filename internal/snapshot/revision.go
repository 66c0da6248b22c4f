package snapshot

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"math"
)

// RevisionScanner reads, from a snapshot as it streams past, the highest revision stored in
// etcd's "key" bucket: the revision `etcdutl snapshot status` reports and a restored cluster
// continues from. etcd's Snapshot response carries no revision, and the serving member's
// revision read just before and just after the stream opened only brackets it while writes go
// on; reading it from the data makes it exact without holding the snapshot anywhere.
//
// A snapshot is a bbolt file (https://github.com/etcd-io/bbolt; page layout in its
// internal/common package) copied page by page from a read transaction: two meta pages, then
// every page up to the high-water mark, free ones included. The pages reachable from that
// transaction cannot change during the copy, but free pages can: writes committed while the
// copy runs reuse them, so they may hold revisions newer than the snapshot's. The scanner
// therefore follows the key bucket's tree: the meta page names the root bucket's page, which
// names the key bucket's root, and the rightmost child of each branch page leads to the leaf
// holding the greatest key, which is its last element (keys are sorted within a page).
//
// Pages arrive in page-number order, not tree order, so the scanner remembers the last child
// of every branch page (branch pages are about one page in a hundred) and the highest
// revision-shaped last keys of leaf pages, up to maxCandidates of them, and resolves the path
// at the end. Only when more than maxCandidates leaves newer than the snapshot were written
// during the copy is the rightmost leaf no longer among them; Revision then reports 0, and the
// agent falls back to the revision the member reported before the stream opened. A key bucket
// small enough to be stored inline in the root bucket's page is read from that page.
type RevisionScanner struct {
	stream pageStream

	// keyRoot is the key bucket's root page, 0 until the root bucket's page was read.
	keyRoot uint64
	// inlineRev is the key bucket's greatest revision when the bucket is inline.
	inlineRev int64
	inline    bool
	// lastChild maps a branch page to its last (rightmost) child.
	lastChild map[uint64]uint64
	// candidates are the leaf pages with the highest revision-shaped last keys.
	candidates candidateHeap
}

const (
	// maxCandidates bounds the leaves remembered (16 bytes each): writes during the copy
	// add a few leaves per etcd commit (one every 100 ms by default).
	maxCandidates = 4096
	// maxTreeDepth bounds the walk down the key bucket's tree; real trees are a few levels
	// deep, and garbage could loop.
	maxTreeDepth = 64
	// keyBucket is the name of etcd's bucket of revisions.
	keyBucket         = "key"
	revisionKeySize   = 17
	tombstoneKeySize  = 18
	revisionSeparator = '_'
	tombstoneMark     = 't'
)

// NewRevisionScanner returns a scanner that has seen nothing yet.
func NewRevisionScanner() *RevisionScanner {
	s := &RevisionScanner{lastChild: map[uint64]uint64{}}
	s.stream.onBranch = func(page, child uint64) { s.lastChild[page] = child }
	s.stream.onLeafLast = s.offerLeaf
	s.stream.onRootPage = s.readRootPage
	return s
}

// Write implements io.Writer; it never fails, so it can sit in an io.MultiWriter.
func (s *RevisionScanner) Write(p []byte) (int, error) {
	s.stream.write(p)
	return len(p), nil
}

// Revision is the key bucket's greatest revision in what was written so far (the whole
// snapshot, once it has streamed), or 0 when it cannot be told for sure.
func (s *RevisionScanner) Revision() int64 {
	if s.inline {
		return s.inlineRev
	}
	if s.keyRoot == 0 {
		return 0
	}
	page := s.keyRoot
	for range maxTreeDepth {
		child, ok := s.lastChild[page]
		if !ok {
			break
		}
		page = child
	}
	for _, c := range s.candidates {
		if c.page == page {
			return c.rev
		}
	}
	return 0
}

// offerLeaf considers the last element of leaf page page. valuePrefix is the start of its
// value: the auth buckets store a user's or role's name as the value's first field, so a name
// that happens to look like a revision key ("operator_readonly") is skipped without taking a
// candidate's place.
func (s *RevisionScanner) offerLeaf(page uint64, key, valuePrefix []byte) {
	rev, ok := parseRevisionKey(key)
	if !ok || isOwnName(key, valuePrefix) {
		return
	}
	if len(s.candidates) < maxCandidates {
		heap.Push(&s.candidates, candidate{rev: rev, page: page})
	} else if rev > s.candidates[0].rev {
		s.candidates[0] = candidate{rev: rev, page: page}
		heap.Fix(&s.candidates, 0)
	}
}

// readRootPage finds the key bucket among the root bucket's elements: either the page of its
// own tree, or its content inline right after the bucket header.
func (s *RevisionScanner) readRootPage(page []byte) {
	order := s.stream.order
	forEachLeafElement(order, page, func(flags uint32, key, value []byte) {
		if flags&bucketLeafFlag == 0 || string(key) != keyBucket || len(value) < bucketHeaderSize {
			return
		}
		if root := order.Uint64(value); root != 0 {
			s.keyRoot = root
			return
		}
		s.inline = true
		forEachLeafElement(order, value[bucketHeaderSize:], func(_ uint32, k, v []byte) {
			if rev, ok := parseRevisionKey(k); ok && !isOwnName(k, v) {
				s.inlineRev = max(s.inlineRev, rev)
			}
		})
	})
}

// isOwnName reports whether value is a protobuf message whose first field is key itself, as
// etcd's auth buckets store users and roles under their names.
func isOwnName(key, value []byte) bool {
	return len(value) >= 2+len(key) && value[0] == 0x0a && int(value[1]) == len(key) && bytes.Equal(value[2:2+len(key)], key)
}

// parseRevisionKey reads the main revision of a key of etcd's key bucket: 8 bytes big-endian,
// '_', 8 bytes of sub revision, and 't' for a tombstone.
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

// candidate is a leaf page and the revision of its last key.
type candidate struct {
	rev  int64
	page uint64
}

// candidateHeap is a min-heap by revision: its root is the candidate to drop first.
type candidateHeap []candidate

func (h candidateHeap) Len() int           { return len(h) }
func (h candidateHeap) Less(i, j int) bool { return h[i].rev < h[j].rev }
func (h candidateHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *candidateHeap) Push(x any)        { *h = append(*h, x.(candidate)) }
func (h *candidateHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
