//go:build e2e

package framework

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/etcd-operator/etcd-operator/test/utils/etcdconn"
)

const (
	// statusTimeout bounds one etcd Status call.
	statusTimeout = 3 * time.Second
	// leaderObserveTimeout bounds how long after MoveLeader the member asked may take to report
	// the new leader: it learns it with the next heartbeat.
	leaderObserveTimeout = 10 * time.Second
)

// LeaderID asks the first etcd member matching selector in the test namespace (dialled by Pod
// IP) which member leads, and returns that member's ID; it fails the test when it cannot.
func (f *Test) LeaderID(selector string) uint64 {
	f.T.Helper()
	c, eps := f.DialMembers(selector, nil)
	ctx, cancel := context.WithTimeout(f.Ctx, statusTimeout)
	defer cancel()
	st, err := c.Status(ctx, eps[0])
	if err != nil {
		f.T.Fatalf("etcd Status at %s: %v", eps[0], err)
	}
	return st.Leader
}

// LeaderMove is a transfer of etcd's leadership (MoveLeader) and how to see that it happened.
type LeaderMove struct {
	// From is the client URL of the member that leads now: only the leader serves MoveLeader.
	From string
	// To is the member ID of the transferee.
	To uint64
	// Observe is the client URL of the member asked afterwards; the move is seen when the
	// leader it reports satisfies Until. MoveLeader returns once the transferee leads, but
	// another member may learn it a heartbeat later.
	Observe string
	Until   func(leader uint64) bool
	// What names the wait in messages, e.g. "a leader other than m-1".
	What string
	// Timeout bounds the MoveLeader call.
	Timeout time.Duration
}

// MoveLeader asks m.From to hand etcd's leadership to m.To and waits up to 10 s until m.Observe
// reports a leader that satisfies m.Until; it fails the test otherwise.
func (f *Test) MoveLeader(m LeaderMove) {
	f.T.Helper()
	c, err := etcdconn.New(f.Ctx, etcdconn.Options{Endpoints: []string{m.From}})
	if err != nil {
		f.T.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(f.Ctx, m.Timeout)
	defer cancel()
	if _, err := c.MoveLeader(ctx, m.To); err != nil {
		f.T.Fatalf("moving etcd's leadership from %s to %s: %v", m.From, strconv.FormatUint(m.To, 16), err)
	}
	err = f.Poll(m.What, leaderObserveTimeout, func(ctx context.Context) (bool, string, error) {
		st, err := c.Status(ctx, m.Observe)
		if err != nil {
			if ctx.Err() != nil {
				return false, "", nil // the poll's own deadline: keep the state seen before
			}
			return false, err.Error(), nil
		}
		return m.Until(st.Leader), fmt.Sprintf("leader %s", strconv.FormatUint(st.Leader, 16)), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
}
