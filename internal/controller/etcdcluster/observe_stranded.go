package etcdcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/guard"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/quorum"
)

// logTailTimeout bounds one read of a member's log tail from its guard.
const logTailTimeout = 2 * time.Second

// logTailReader reads a member's log tail from the data-dir guard in its Pod.
type logTailReader func(ctx context.Context, podIP string) (guard.LogTailAnswer, error)

// httpLogTail asks the guard at podIP over plain HTTP: the answer holds positions and IDs only
// (docs/design/quorum-recovery.md).
func httpLogTail(ctx context.Context, podIP string) (guard.LogTailAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, logTailTimeout)
	defer cancel()
	url := "http://" + net.JoinHostPort(podIP, strconv.Itoa(int(desired.GuardPort))) + guard.LogTailPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return guard.LogTailAnswer{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return guard.LogTailAnswer{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return guard.LogTailAnswer{}, fmt.Errorf("log tail: %s", resp.Status)
	}
	var a guard.LogTailAnswer
	err = json.NewDecoder(resp.Body).Decode(&a)
	return a, err
}

// observeStranded asks every running member about itself after the linearizable member list
// failed: its Status, its own member list and its log tail. Only a cluster that formed is asked,
// and only members that answer all but the tail count as survivors.
func (r *Reconciler) observeStranded(ctx context.Context, o *observation, cli etcdAPI, byMember map[string]string) {
	if o.cluster.Status.ClusterID == "" || r.logTail == nil {
		return
	}
	out := membership.Stranded{Survivors: map[string]membership.Survivor{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, ep := range byMember {
		pod := o.pods[name]
		wg.Go(func() {
			sv, ok := r.strandedMember(ctx, cli, ep, pod.Status.PodIP)
			if !ok {
				return
			}
			mu.Lock()
			out.Survivors[name] = sv
			mu.Unlock()
		})
	}
	wg.Wait()
	o.stranded = out
}

// stillStranded asks the members about themselves first when the last pass found no leader:
// while none reports one, a linearizable MemberList would only wait out its timeout, and every
// step of a recovery would pay it. It reports whether the pass is done with etcd.
func (r *Reconciler) stillStranded(ctx context.Context, o *observation, cli etcdAPI, byMember map[string]string) bool {
	r.observeStranded(ctx, o, cli, byMember)
	for _, sv := range o.stranded.Survivors {
		if sv.Status.Leader != 0 {
			o.stranded = membership.Stranded{}
			return false
		}
	}
	return len(o.stranded.Survivors) > 0
}

func (r *Reconciler) strandedMember(ctx context.Context, cli etcdAPI, endpoint, podIP string) (membership.Survivor, bool) {
	st, err := cli.Status(ctx, endpoint)
	if err != nil || st.ID == 0 {
		return membership.Survivor{}, false
	}
	list, err := cli.LocalMemberList(ctx, endpoint)
	if err != nil {
		return membership.Survivor{}, false
	}
	sv := membership.Survivor{Status: st, Members: list}
	if tail, err := r.logTail(ctx, podIP); err == nil && tail.MemberID == etcdclient.FormatID(st.ID) {
		sv.Tail, sv.TailKnown, sv.ClusterID = quorum.LogPosition{Term: tail.Term, Index: tail.Index}, true, tail.ClusterID
	}
	return sv, true
}
