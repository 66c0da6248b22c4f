//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// writeKeys writes n keys under prefix through the voters and returns them.
func writeKeys(f *framework.Test, name, prefix string, n int) map[string]string {
	f.T.Helper()
	cli, _ := dialVoters(f, name)
	defer func() { _ = cli.Close() }()
	want := map[string]string{}
	for i := range n {
		k, v := fmt.Sprintf("%s%02d", prefix, i), fmt.Sprintf("value-%d-%d", i, time.Now().UnixNano())
		ctx, cancel := context.WithTimeout(f.Ctx, 5*time.Second)
		_, err := cli.Put(ctx, k, v)
		cancel()
		if err != nil {
			f.T.Fatalf("writing %s: %v", k, err)
		}
		want[k] = v
	}
	return want
}

// readKeys reads every key of want through the voters and checks its value, then that every
// voter holds the same keyspace.
func readKeys(f *framework.Test, name string, want map[string]string) {
	f.T.Helper()
	cli, eps := dialVoters(f, name)
	for _, k := range slices.Sorted(maps.Keys(want)) {
		ctx, cancel := context.WithTimeout(f.Ctx, 5*time.Second)
		resp, err := cli.Get(ctx, k)
		cancel()
		switch {
		case err != nil:
			f.T.Errorf("reading %s: %v", k, err)
		case len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != want[k]:
			f.T.Errorf("%s = %v, want %q", k, resp.Kvs, want[k])
		}
	}
	f.RequireHashKVEqual(cli, eps, time.Minute)
}
