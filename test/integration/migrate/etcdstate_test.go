package migrate_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

// refusedQuota is the refused member's --quota-backend-bytes in the AlarmsActive case: small,
// so that a few writes fill it.
const refusedQuota = 256 * 1024

// refusedClient is a client of the refused cluster's etcd (of its first Pod).
func (e *env) refusedClient(t *testing.T) *clientv3.Client {
	t.Helper()
	return etcdClient(t, e.members[refusedName].Members[0].ClientURL)
}

func etcdClient(t *testing.T, url string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// addRefusedLearner adds a learner to the refused cluster's etcd, as the first step of a
// membership change does; it never starts.
func (e *env) addRefusedLearner(t *testing.T) {
	t.Helper()
	if _, err := e.refusedClient(t).MemberAddAsLearner(t.Context(), []string{"http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
}

// moveRefusedPeerURL gives the refused member a peer URL outside the legacy layout, as a
// cluster created by hand and moved under the legacy operator has.
func (e *env) moveRefusedPeerURL(t *testing.T) {
	t.Helper()
	cli := e.refusedClient(t)
	list, err := cli.MemberList(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	peer := "https://" + legacy.PodName(refusedName, 0) + ".elsewhere:2380"
	if _, err := cli.MemberUpdate(t.Context(), list.Members[0].ID, []string{peer}); err != nil {
		t.Fatal(err)
	}
}

// fillRefusedQuota writes to the refused member until its backend passes its quota and etcd
// raises the NOSPACE alarm.
func (e *env) fillRefusedQuota(t *testing.T) {
	t.Helper()
	cli := e.refusedClient(t)
	value := strings.Repeat("x", 32*1024)
	for i := 0; ; i++ {
		_, err := cli.Put(t.Context(), "fill/"+strconv.Itoa(i), value)
		if errors.Is(err, rpctypes.ErrNoSpace) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i > 1000 {
			t.Fatal("etcd never ran out of space")
		}
	}
	alarms, err := cli.AlarmList(t.Context())
	if err != nil || len(alarms.Alarms) == 0 {
		t.Fatalf("no alarm after NOSPACE (%v)", err)
	}
}

// splitRefused answers the refused cluster's second Pod with an etcd cluster of its own.
func (e *env) splitRefused(t *testing.T) {
	t.Helper()
	e.startSecond(t)
}

func (e *env) startSecond(t *testing.T) *clientv3.Client {
	t.Helper()
	c := e.startPodEtcd(t, e.added[refusedName], 1)
	e.members[legacy.PodName(refusedName, 1)] = c
	return etcdClient(t, c.Members[0].ClientURL)
}

// divergeRefused splits the refused cluster and writes one key to each side: the same
// revision, different data.
func (e *env) divergeRefused(t *testing.T) {
	t.Helper()
	second := e.startSecond(t)
	for k, cli := range map[string]*clientv3.Client{"first": e.refusedClient(t), "second": second} {
		if _, err := cli.Put(t.Context(), "side", k); err != nil {
			t.Fatal(err)
		}
	}
}

// silenceRefusedSecond answers the refused cluster's second Pod with an etcd that was stopped.
func (e *env) silenceRefusedSecond(t *testing.T) {
	t.Helper()
	c := e.startPodEtcd(t, e.added[refusedName], 1)
	if err := c.Members[0].Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.members[legacy.PodName(refusedName, 1)] = c
}
