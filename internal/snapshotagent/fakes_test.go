package snapshotagent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"sync"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// streamOf returns size random bytes followed by their SHA-256, as etcd's snapshot stream ends.
func streamOf(size int, seed uint64) []byte {
	data := make([]byte, size, size+sha256.Size)
	rnd := rand.New(rand.NewPCG(seed, seed)) //nolint:gosec // G404: test data, seeded so that it reproduces.
	for i := range data {
		data[i] = byte(rnd.Uint32())
	}
	sum := sha256.Sum256(data)
	return append(data, sum[:]...)
}

// fakeEtcd answers Status per endpoint and serves one snapshot stream.
type fakeEtcd struct {
	mu       sync.Mutex
	statuses map[string]etcdclient.Status
	errs     map[string]error
	// stream is what Snapshot serves; failAfter, when > 0, breaks it after that many bytes.
	stream    []byte
	failAfter int
	// revisionStep is added to every Status's revision after the first call for an endpoint.
	revisionStep int64
	calls        []string
	closed       bool
}

func (f *fakeEtcd) Status(_ context.Context, endpoint string) (etcdclient.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "Status "+endpoint)
	if err := f.errs[endpoint]; err != nil {
		return etcdclient.Status{}, err
	}
	st, ok := f.statuses[endpoint]
	if !ok {
		return etcdclient.Status{}, etcdclient.NewError("Status", etcdclient.ErrUnavailable)
	}
	st.Endpoint = endpoint
	f.statuses[endpoint] = etcdclient.Status{
		Endpoint: st.Endpoint, ID: st.ID, Leader: st.Leader, Version: st.Version, DBSize: st.DBSize,
		IsLearner: st.IsLearner, Revision: st.Revision + f.revisionStep,
	}
	return st, nil
}

func (f *fakeEtcd) Snapshot(_ context.Context, endpoint string) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "Snapshot "+endpoint)
	var r io.Reader = bytes.NewReader(f.stream)
	if f.failAfter > 0 {
		r = io.MultiReader(bytes.NewReader(f.stream[:f.failAfter]), errReader{etcdclient.NewError("Snapshot", etcdclient.ErrUnavailable)})
	}
	return io.NopCloser(r), nil
}

func (f *fakeEtcd) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeEtcd) dialer() etcdDialer {
	return func(context.Context) (etcdAPI, error) { return f, nil }
}

func (f *fakeEtcd) called(prefix string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if len(c) >= len(prefix) && c[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

var errInjected = errors.New("injected failure")
