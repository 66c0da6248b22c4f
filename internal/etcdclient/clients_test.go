package etcdclient_test

import (
	"context"
	"errors"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
)

// lister is the kind of narrow interface a controller declares.
type lister interface {
	MemberList(ctx context.Context) ([]etcdclient.Member, error)
}

func TestNarrowHandsOutThePoolsClients(t *testing.T) {
	t.Parallel()
	rec := &etcdfake.Recorder{Members: []etcdclient.Member{{ID: 7, Name: "a"}}}
	dials := 0
	pool := etcdclient.NewPool(etcdclient.WithDialer(func(context.Context, etcdclient.Config) (etcdclient.DialedClient, error) {
		dials++
		return closer{rec}, nil
	}))
	t.Cleanup(func() { _ = pool.Close() })
	narrow := etcdclient.Narrow(pool, func(c etcdclient.Client) lister { return c })
	cfg := etcdclient.Config{Endpoints: []string{"http://10.0.0.1:2379"}}
	for range 2 {
		cli, err := narrow.Get(context.Background(), "ns/c", cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := cli.MemberList(context.Background()); err != nil || len(got) != 1 || got[0].ID != 7 {
			t.Fatalf("MemberList = %v, %v", got, err)
		}
	}
	if dials != 1 {
		t.Errorf("dials = %d, want 1: the narrowed view shares the pool's client", dials)
	}
	if err := narrow.Forget("ns/c"); err != nil || pool.Len() != 0 {
		t.Errorf("Forget = %v, pool holds %d clients", err, pool.Len())
	}
	_ = pool.Close()
	if _, err := narrow.Get(context.Background(), "ns/c", cfg); !errors.Is(err, etcdclient.ErrPoolClosed) {
		t.Errorf("Get on a closed pool = %v", err)
	}
}

type closer struct{ *etcdfake.Recorder }

func (closer) Close() error { return nil }
