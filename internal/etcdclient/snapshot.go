package etcdclient

import (
	"context"
	"errors"
	"io"
)

// Snapshot opens a stream of the backend database of the member serving endpoint
// (Maintenance.Snapshot). When it returns, the member has taken its point-in-time copy (the
// first message has arrived); the copy holds every write the member had applied by then.
// The stream ends with etcd's SHA-256 of the bytes before it, which `etcdutl snapshot restore`
// checks (https://etcd.io/docs/v3.6/op-guide/recovery/).
//
// No per-call timeout applies, since a large database takes minutes: ctx bounds the whole
// stream. Read errors are classified like every other error of Conn. Snapshot is not part of
// Client: only the snapshot agent, which dials its own Conn, streams snapshots.
func (c *Conn) Snapshot(ctx context.Context, endpoint string) (io.ReadCloser, error) {
	api, err := c.endpointAPI(endpoint)
	if err != nil {
		return nil, c.fail("Snapshot", err)
	}
	resp, err := api.SnapshotWithVersion(ctx)
	if err != nil {
		return nil, c.fail("Snapshot", err)
	}
	return &snapshotStream{rc: resp.Snapshot, conn: c}, nil
}

// snapshotStream classifies the stream's read errors, whose text would otherwise carry
// addresses.
type snapshotStream struct {
	rc   io.ReadCloser
	conn *Conn
}

func (s *snapshotStream) Read(p []byte) (int, error) {
	n, err := s.rc.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = s.conn.fail("Snapshot", err)
	}
	return n, err
}

func (s *snapshotStream) Close() error { return s.rc.Close() }
