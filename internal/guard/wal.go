package guard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// LogTail is what a member's write-ahead log says about it: whose log it is and the last entry
// it holds. Quorum-loss recovery starts from the survivor whose log is most up to date by that
// last entry (docs/design/quorum-recovery.md), which neither Status nor any other RPC reports:
// Status has the commit and applied indexes, and an entry the lost leader already acknowledged
// can sit beyond both.
type LogTail struct {
	// MemberID and ClusterID are from the WAL's metadata record.
	MemberID, ClusterID uint64
	// Term and Index are the last entry's (or, with no entry after it, the last snapshot's).
	Term, Index uint64
}

// Record types of etcd's WAL (the walpb.Record type field). The format has not changed since
// etcd 3.0 and is the same for every supported minor.
const (
	walMetadataType = 1
	walEntryType    = 2
	walCRCType      = 4
	walSnapshotType = 5
)

// walCRC is the table etcd's WAL checksums with.
var walCRC = crc32.MakeTable(crc32.Castagnoli)

// ReadLogTail reads the WAL under dataDir (member/wal) without locking it: it is used while etcd
// runs without a quorum, when no leader can append to the log. Reading stops at the first frame
// that is not a whole, checksummed record: etcd preallocates segment files with zeros, and a
// record being written may be torn.
func ReadLogTail(dataDir string) (LogTail, error) {
	dir := filepath.Join(dataDir, "member", "wal")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return LogTail{}, fmt.Errorf("reading the WAL: %w", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".wal") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return LogTail{}, fmt.Errorf("reading the WAL: no segment in %s", dir)
	}
	slices.Sort(names) // <seq>-<index>.wal in fixed-width hex: name order is write order
	var r walReader
	for _, n := range names {
		if err := r.readFile(filepath.Join(dir, n)); err != nil {
			return LogTail{}, err
		}
	}
	if !r.sawMetadata {
		return LogTail{}, fmt.Errorf("reading the WAL: no metadata record in %s", dir)
	}
	return r.tail, nil
}

// walReader accumulates what the records of consecutive segments say.
type walReader struct {
	tail        LogTail
	sawMetadata bool
	crc         uint32
}

func (r *walReader) readFile(path string) error {
	b, err := os.ReadFile(path) //nolint:gosec // the member's own WAL segment, listed from its data dir
	if err != nil {
		return fmt.Errorf("reading the WAL: %w", err)
	}
	for len(b) >= 8 {
		rec, n, ok := nextFrame(b)
		if !ok {
			return nil
		}
		b = b[n:]
		if err := r.apply(rec); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return nil // a torn record ends the log
			}
			return fmt.Errorf("reading %s: %w", path, err)
		}
	}
	return nil
}

// nextFrame cuts one record off b: an 8-byte little-endian length whose top byte may carry
// padding, then the record and its padding. A zero length is the preallocated, unwritten rest.
func nextFrame(b []byte) (rec []byte, n int, ok bool) {
	lenField := binary.LittleEndian.Uint64(b[:8])
	size := lenField &^ (uint64(0xff) << 56)
	var pad uint64
	if lenField&(1<<63) != 0 {
		pad = (lenField >> 56) & 0x7
	}
	if size == 0 || size+pad > uint64(len(b)-8) { //nolint:gosec // len(b) ≥ 8: the caller checks it
		return nil, 0, false
	}
	return b[8 : 8+size], int(8 + size + pad), true //nolint:gosec // bounded by len(b) just above
}

// apply folds one record into the tail, checking the rolling checksum etcd keeps over records.
func (r *walReader) apply(raw []byte) error {
	typ, crc, data, err := decodeRecord(raw)
	if err != nil {
		return err
	}
	if typ == walCRCType {
		r.crc = crc // each segment starts with the checksum the previous one ended with
		return nil
	}
	if sum := crc32.Update(r.crc, walCRC, data); sum != crc {
		return io.ErrUnexpectedEOF
	}
	r.crc = crc32.Update(r.crc, walCRC, data)
	switch typ {
	case walMetadataType:
		r.tail.MemberID = uint64Field(data, 1)
		r.tail.ClusterID = uint64Field(data, 2)
		r.sawMetadata = true
	case walEntryType:
		// A later entry at a lower index overwrote a conflicting suffix: the last one written
		// is the log's last entry.
		r.tail.Term, r.tail.Index = uint64Field(data, 2), uint64Field(data, 3)
	case walSnapshotType:
		if idx := uint64Field(data, 1); idx > r.tail.Index {
			r.tail.Index, r.tail.Term = idx, uint64Field(data, 2)
		}
	}
	return nil
}

// decodeRecord decodes walpb.Record{type = 1, crc = 2, data = 3}.
func decodeRecord(b []byte) (typ int64, crc uint32, data []byte, err error) {
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, 0, nil, io.ErrUnexpectedEOF
		}
		b = b[n:]
		switch {
		case num == 1 && wt == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			typ, n = int64(v), m //nolint:gosec // etcd writes small record types
		case num == 2 && wt == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			crc, n = uint32(v), m //nolint:gosec // a uint32 field
		case num == 3 && wt == protowire.BytesType:
			data, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, wt, b)
		}
		if n < 0 {
			return 0, 0, nil, io.ErrUnexpectedEOF
		}
		b = b[n:]
	}
	return typ, crc, data, nil
}

// uint64Field returns varint field num of a protobuf message, 0 when absent or malformed.
func uint64Field(b []byte, want protowire.Number) uint64 {
	var out uint64
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return out
		}
		b = b[n:]
		if num == want && wt == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return out
			}
			out, n = v, m
		} else {
			n = protowire.ConsumeFieldValue(num, wt, b)
		}
		if n < 0 {
			return out
		}
		b = b[n:]
	}
	return out
}
