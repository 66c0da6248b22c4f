package etcdcluster

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/podstate"
)

// endpoints are the client URLs of members whose Pod runs with an IP, by member name: Pod IPs,
// never DNS (the operator may run outside the cluster's DNS, and tests run it on the host). A
// member being removed stays in: until etcd no longer lists it, it votes, and the quorum gate
// must see its health (listed drops it from Status once it is gone).
func (o *observation) endpoints() map[string]string {
	out := map[string]string{}
	for i := range o.members {
		m := &o.members[i]
		if m.Spec.Dormant {
			continue
		}
		if pod := o.pods[m.Name]; podstate.Running(pod) && pod.Status.PodIP != "" {
			out[m.Name] = membership.ClientURL(pod.Status.PodIP, o.clientTLS())
		}
	}
	return out
}

// observeEtcd fills the etcd view. Failures leave it unknown: a silent etcd is an observation,
// not an error of the pass.
func (r *Reconciler) observeEtcd(ctx context.Context, o *observation) {
	log := logf.FromContext(ctx)
	byMember := o.endpoints()
	if len(byMember) == 0 || r.etcd == nil {
		return
	}
	cli := r.dial(ctx, o, slices.Sorted(maps.Values(byMember)))
	if cli == nil {
		return
	}
	o.etcdClient = cli
	if r.memory.wasStranded(o.key()) && r.stillStranded(ctx, o, cli, byMember) {
		return
	}
	start := time.Now()
	list, err := cli.MemberList(ctx)
	if err != nil {
		log.V(1).Info("MemberList failed", "reason", err.Error(), "took", time.Since(start))
		if r.noteAuthRefusal(o, err) {
			// Not a lost quorum: etcd answered, only not without credentials.
			r.memory.setStranded(o.key(), false)
			return
		}
		r.observeStranded(ctx, o, cli, byMember)
		r.memory.setStranded(o.key(), len(o.stranded.Survivors) > 0)
		return
	}
	r.memory.setStranded(o.key(), false)
	listTook := time.Since(start)
	// etcd serves AlarmList through raft (a proposal the leader commits), so it takes as long as
	// a write; it runs beside the Status calls instead of after them.
	var alarms []etcdclient.Alarm
	var alarmsErr error
	var wg sync.WaitGroup
	wg.Go(func() { alarms, alarmsErr = cli.AlarmList(ctx) })
	o.etcd = membership.Etcd{Known: true, Members: list, Statuses: statuses(ctx, cli, listed(byMember, list))}
	statusTook := time.Since(start) - listTook
	wg.Wait()
	for _, st := range o.etcd.Statuses {
		if st.Leader != 0 {
			o.etcd.Leader = st.Leader
			break
		}
	}
	if alarmsErr == nil {
		o.etcd.Alarms = alarms
	}
	r.noteAuthRefusal(o, alarmsErr)
	o.etcd.FirstSeen, o.etcd.StartedSeen = r.memory.seen(o.key(), list, o.now)
	o.etcd.HealthySeen = r.memory.healthy(o.key(), list)
	// Slow observations make every step slow; debug logs say which call it was.
	log.V(1).Info("Observed etcd", "memberList", listTook, "status", statusTook, "total", time.Since(start), "answered", len(o.etcd.Statuses))
}

// listed keeps the endpoints of members etcd's member list shows started, sorted: a member
// etcd does not list was removed, and one that has not started cannot answer yet.
func listed(byMember map[string]string, list []etcdclient.Member) []string {
	var out []string
	for name, ep := range byMember {
		if slices.ContainsFunc(list, func(e etcdclient.Member) bool {
			return e.Started() && (e.Name == name || slices.ContainsFunc(e.PeerURLs, func(u string) bool { return membership.NameFromPeerURL(u) == name }))
		}) {
			out = append(out, ep)
		}
	}
	slices.Sort(out)
	return out
}

// statuses asks every endpoint for its Status in parallel (each call has its own timeout in the
// adapter) and indexes the answers by member ID.
func statuses(ctx context.Context, cli etcdAPI, eps []string) map[uint64]etcdclient.Status {
	out := map[uint64]etcdclient.Status{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, ep := range eps {
		wg.Go(func() {
			st, err := cli.Status(ctx, ep)
			if err != nil || st.ID == 0 {
				return
			}
			mu.Lock()
			out[st.ID] = st
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}
