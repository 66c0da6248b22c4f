package snapshotagent_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/snapshot"
	"github.com/etcd-operator/etcd-operator/test/utils/agentrun"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
)

// TestRevisionUnderWrites: while clients write, the revision the agent reports is exactly the
// one in the artifact (what etcdutl reads, and what its own scanner reads from the file), and a
// cluster restored from it holds exactly the source's keyspace at that revision.
func TestRevisionUnderWrites(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c := startCluster(ctx, t, "3.6", etcdproc.Options{Size: 3})
	cli := client(t, c, "", "")
	fill(ctx, t, cli, false)

	writeCtx, stopWriting := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; writeCtx.Err() == nil; i++ {
				_, err := cli.Put(writeCtx, fmt.Sprintf("w%d/%d", w, i%300), fmt.Sprint(i))
				if err != nil && !errors.Is(err, context.Canceled) && writeCtx.Err() == nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	dir := t.TempDir()
	var last snapshot.Result
	var lastPath string
	for i := range 4 {
		name := fmt.Sprintf("busy-%d", i)
		env := pvcEnv(c, dir, name, "uid-"+name)
		code, res := agentrun.Snapshot(ctx, t, env)
		if code != 0 {
			t.Fatalf("snapshot %d: %+v", i, res)
		}
		path := artifactPath(env, name)
		st := snapshotStatus(t, "3.6", path)
		if scanned := scanFile(t, path); st.Revision != res.Revision || scanned != st.Revision {
			t.Errorf("snapshot %d: the agent reports revision %d, etcdutl %d, the scanner over the file %d", i, res.Revision, st.Revision, scanned)
		}
		last, lastPath = res, path
	}
	stopWriting()
	wg.Wait()

	want, _ := keyspace(ctx, t, cli, last.Revision)
	got, rev := keyspace(ctx, t, client(t, restore(ctx, t, "3.6", lastPath), "", ""), 0)
	if rev != last.Revision || !maps.Equal(got, want) {
		t.Errorf("restored cluster: %d keys at revision %d; the source had %d keys at %d", len(got), rev, len(want), last.Revision)
	}
}

// scanFile runs the revision scanner over a file, in the gRPC stream's chunk size.
func scanFile(t *testing.T, path string) int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := snapshot.NewRevisionScanner()
	for len(data) > 0 {
		n := min(len(data), 32<<10)
		_, _ = s.Write(data[:n])
		data = data[n:]
	}
	return s.Revision()
}
