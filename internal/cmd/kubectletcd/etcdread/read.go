// Package etcdread asks a cluster's etcd what the read commands show: its member list, every
// member's Status and the active alarms. Calls run in parallel, each bounded by --timeout, and
// a call that fails is recorded next to its answer instead of failing the read, because a
// read command is most needed when part of the cluster is down (docs/kubectl-etcd.md, "status").
package etcdread

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// States of a View: how far the read got.
const (
	// StateReached: a session was opened; the calls' own errors are in the View.
	StateReached = "reached"
	// StateSkipped: --no-etcd; etcd was not dialled.
	StateSkipped = "skipped"
	// StateNoRunningPod: no member Pod runs (a paused or stopped cluster), so there is nothing
	// to dial through. That is the cluster's state, not a failure of the command.
	StateNoRunningPod = "noRunningPod"
	// StateUnreachable: dialling failed (port-forward, TLS material, credentials).
	StateUnreachable = "unreachable"
)

// Why a member with a Pod was not asked for its Status.
var (
	// ErrPodNotRunning: the member's Pod is not in phase Running, so no port-forward reaches it.
	ErrPodNotRunning = errors.New("its Pod is not running")
	// ErrNotForwarded: the port-forward to the member's Pod failed while others succeeded.
	ErrNotForwarded = errors.New("the port-forward to its Pod failed")
)

// What says which calls Read makes beyond MemberList.
type What struct {
	// Statuses asks every reached member for its Status.
	Statuses bool
	// Alarms lists the active alarms.
	Alarms bool
}

// View is what etcd answered. Errors are kept per call so that each can be shown where its
// answer would have been.
type View struct {
	State string
	// DialErr says why State is StateUnreachable.
	DialErr error
	// Members is MemberList's answer, unless MembersErr.
	Members    []etcdclient.Member
	MembersErr error
	// Statuses and StatusErrs are keyed by EtcdMember name. A member without a Pod is in
	// neither; one whose Pod was not reached has ErrPodNotRunning or ErrNotForwarded.
	Statuses   map[string]etcdclient.Status
	StatusErrs map[string]error
	// Alarms is AlarmList's answer, unless AlarmsErr.
	Alarms    []etcdclient.Alarm
	AlarmsErr error
}

// Reached reports whether etcd was dialled successfully.
func (v *View) Reached() bool { return v.State == StateReached }

// Reader reads one cluster's etcd, keeping its session across reads as long as the member Pods
// stay the same: status --watch then pays for the port-forwards once, not every frame.
type Reader struct {
	d    *invocation.Deps
	sess *invocation.EtcdSession
	key  string
}

// NewReader returns a Reader over d; Close it when done.
func NewReader(d *invocation.Deps) *Reader { return &Reader{d: d} }

// Close closes the session, if one is open.
func (r *Reader) Close() {
	if r.sess != nil {
		_ = r.sess.Close()
		r.sess, r.key = nil, ""
	}
}

// Read asks etcd about s. It never fails: a dial that fails is StateUnreachable with DialErr.
func (r *Reader) Read(ctx context.Context, s *clusterread.State, what What) *View {
	if r.d.Globals.NoEtcd {
		return &View{State: StateSkipped}
	}
	pods := running(s.MemberPods())
	if len(pods) == 0 {
		r.Close()
		return &View{State: StateNoRunningPod}
	}
	if err := r.session(ctx, s, pods); err != nil {
		return &View{State: StateUnreachable, DialErr: err}
	}
	return r.ask(ctx, s, what)
}

// session dials once per distinct set of running member Pods.
func (r *Reader) session(ctx context.Context, s *clusterread.State, pods []corev1.Pod) error {
	key := podsKey(pods)
	if r.sess != nil && r.key == key {
		return nil
	}
	r.Close()
	sess, err := r.d.Dialer.Dial(ctx, s.Cluster, pods)
	if err != nil {
		return fmt.Errorf("reaching etcd of %s/%s: %w", s.Cluster.Namespace, s.Cluster.Name, err)
	}
	r.sess, r.key = sess, key
	return nil
}

// ask makes every call at once: on a healthy cluster the slowest round trip through one
// port-forward, not their sum, is what a person waits for.
func (r *Reader) ask(ctx context.Context, s *clusterread.State, what What) *View {
	v := &View{State: StateReached, Statuses: map[string]etcdclient.Status{}, StatusErrs: map[string]error{}}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	call := func(f func(ctx context.Context)) {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, r.d.Globals.Timeout)
			defer cancel()
			f(ctx)
		})
	}
	e := r.sess.Etcd
	call(func(ctx context.Context) {
		ms, err := e.MemberList(ctx)
		mu.Lock()
		defer mu.Unlock()
		v.Members, v.MembersErr = ms, err
	})
	if what.Alarms {
		call(func(ctx context.Context) {
			as, err := e.AlarmList(ctx)
			mu.Lock()
			defer mu.Unlock()
			v.Alarms, v.AlarmsErr = as, err
		})
	}
	if what.Statuses {
		for member, ep := range r.endpoints(s, v) {
			call(func(ctx context.Context) {
				st, err := e.Status(ctx, ep)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					v.StatusErrs[member] = err
					return
				}
				v.Statuses[member] = st
			})
		}
	}
	wg.Wait()
	return v
}

// endpoints maps each member with a reached Pod to that Pod's endpoint, and records in v why a
// member with a Pod has none.
func (r *Reader) endpoints(s *clusterread.State, v *View) map[string]string {
	out := map[string]string{}
	for _, m := range s.Members {
		p, ok := s.Pods[m.Name]
		if !ok {
			continue
		}
		ep, ok := r.sess.Endpoints[p.Name]
		switch {
		case ok:
			out[m.Name] = ep
		case p.Status.Phase != corev1.PodRunning:
			v.StatusErrs[m.Name] = ErrPodNotRunning
		default:
			v.StatusErrs[m.Name] = ErrNotForwarded
		}
	}
	return out
}

// running are the Pods a port-forward can reach, as the dialer picks them.
func running(pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning {
			out = append(out, p)
		}
	}
	return out
}

func podsKey(pods []corev1.Pod) string {
	keys := make([]string, 0, len(pods))
	for _, p := range pods {
		keys = append(keys, p.Name+"/"+string(p.UID))
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

// ErrorKind names the kind of an etcd call's failure in a word or two, for a table cell.
func ErrorKind(err error) string {
	kinds := []struct {
		err  error
		kind string
	}{
		{etcdclient.ErrTimeout, "timeout"},
		{context.DeadlineExceeded, "timeout"},
		{etcdclient.ErrUnavailable, "unavailable"},
		{etcdclient.ErrNoLeader, "no leader"},
		{etcdclient.ErrAuthFailed, "auth failed"},
		{etcdclient.ErrAuthRequired, "auth required"},
		{etcdclient.ErrPermissionDenied, "permission denied"},
		{etcdclient.ErrClosed, "closed"},
		{context.Canceled, "canceled"},
		{ErrPodNotRunning, "Pod not running"},
		{ErrNotForwarded, "no port-forward"},
	}
	if err == nil {
		return ""
	}
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.kind
		}
	}
	return "error"
}

// Message is err's text with addresses and URLs removed: etcdclient's errors are sanitised
// already, but a dial error may quote a local address or a Pod's URL.
func Message(err error) string {
	if err == nil {
		return ""
	}
	return etcdclient.Sanitize(err.Error())
}

// Errors lists the failed cluster-wide calls of v (not the per-member ones) as "Call: message".
func (v *View) Errors() []string {
	var out []string
	if v.DialErr != nil {
		out = append(out, Message(v.DialErr))
	}
	if v.MembersErr != nil {
		out = append(out, "MemberList: "+Message(v.MembersErr))
	}
	if v.AlarmsErr != nil {
		out = append(out, "AlarmList: "+Message(v.AlarmsErr))
	}
	return out
}

// Source is how far a read of etcd got, as the commands' JSON and YAML print it.
type Source struct {
	// State is reached, skipped (--no-etcd), noRunningPod or unreachable.
	State string `json:"state"`
	// Errors are the failed dial or cluster-wide calls, addresses removed.
	Errors []string `json:"errors,omitempty"`
}

// Source is v as reported.
func (v *View) Source() Source { return Source{State: v.State, Errors: v.Errors()} }

// Note is the line a text table ends with when etcd's half of it is missing or partial; "" when
// etcd answered every cluster-wide call.
func (s Source) Note() string {
	switch s.State {
	case StateSkipped:
		return "etcd not asked (--no-etcd): what the EtcdMembers record is shown; - marks what only etcd knows."
	case StateNoRunningPod:
		return "etcd not asked: no member Pod is running; - marks what only etcd knows."
	case StateUnreachable:
		return fmt.Sprintf("etcd unreachable (%s); - marks what only etcd knows.", strings.Join(s.Errors, "; "))
	}
	if len(s.Errors) > 0 {
		return "etcd: " + strings.Join(s.Errors, "; ")
	}
	return ""
}
