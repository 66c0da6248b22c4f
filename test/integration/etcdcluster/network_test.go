package etcdcluster_test

import (
	"context"
	"fmt"
	"net/url"
	"sync"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
)

// network maps Pod IPs to the fake etcd cluster serving them, so that the real etcdclient.Pool
// dials fakes through its Dialer.
type network struct {
	mu     sync.Mutex
	byIP   map[string]*etcdfake.Cluster
	nextIP int
	// beforeAdd, by fake, is called with the peer URLs of every MemberAddAsLearner the operator
	// sends it, before the fake adds the learner.
	beforeAdd map[*etcdfake.Cluster]func(peerURLs []string)
}

var net0 = &network{byIP: map[string]*etcdfake.Cluster{}, beforeAdd: map[*etcdfake.Cluster]func([]string){}}

// onAdd makes the operator's adds to f call hook first.
func (n *network) onAdd(f *etcdfake.Cluster, hook func(peerURLs []string)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.beforeAdd[f] = hook
}

// allocate returns a fresh Pod IP served by f.
func (n *network) allocate(f *etcdfake.Cluster) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nextIP++
	ip := fmt.Sprintf("10.77.%d.%d", n.nextIP/250, n.nextIP%250+1)
	n.byIP[ip] = f
	return ip
}

// dial is the Pool's Dialer: the fake behind the first endpoint that has one.
func (n *network) dial(_ context.Context, cfg etcdclient.Config) (etcdclient.DialedClient, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ep := range cfg.Endpoints {
		u, err := url.Parse(ep)
		if err != nil {
			continue
		}
		if f := n.byIP[u.Hostname()]; f != nil {
			return closable{f, n.beforeAdd[f]}, nil
		}
	}
	return nil, etcdclient.NewError("dial", etcdclient.ErrUnavailable)
}

// closable is a pooled client of a fake: closing it leaves the fake cluster running.
type closable struct {
	*etcdfake.Cluster
	beforeAdd func(peerURLs []string)
}

func (closable) Close() error { return nil }

func (c closable) MemberAddAsLearner(ctx context.Context, peerURLs []string) (etcdclient.Member, []etcdclient.Member, error) {
	if c.beforeAdd != nil {
		c.beforeAdd(peerURLs)
	}
	return c.Cluster.MemberAddAsLearner(ctx, peerURLs)
}

// runEtcd runs the etcd process of the member with peer URL peer, as its Pod's container does:
// it publishes name and clientURL, and a learner catches up with the leader at once. While no
// member has its peer URL, nothing runs: etcd would exit at start ("member not found"), and the
// data-dir guard of a staged member holds it until its add. It reports whether etcd runs.
func runEtcd(f *etcdfake.Cluster, name, peer, clientURL string) bool {
	e, ok := f.ByPeerURL(peer)
	if !ok {
		return false
	}
	if f.Start(e.ID, name, clientURL) != nil {
		return false
	}
	_ = f.MarkSynced(e.ID)
	return true
}

// stopEtcd stops the etcd process of the member with peer URL peer, if it ever ran.
func stopEtcd(f *etcdfake.Cluster, peer string) {
	if e, ok := f.ByPeerURL(peer); ok && e.Started() {
		_ = f.Stop(e.ID)
	}
}
