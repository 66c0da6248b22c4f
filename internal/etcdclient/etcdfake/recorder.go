package etcdfake

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// Method names an etcdclient.Client method in call logs and error tables.
type Method string

// The methods of etcdclient.Client.
const (
	MemberList         Method = "MemberList"
	LocalMemberList    Method = "LocalMemberList"
	MemberAddAsLearner Method = "MemberAddAsLearner"
	MemberPromote      Method = "MemberPromote"
	MemberRemove       Method = "MemberRemove"
	MoveLeader         Method = "MoveLeader"
	Status             Method = "Status"
	AlarmList          Method = "AlarmList"
	AlarmDisarm        Method = "AlarmDisarm"
	Defragment         Method = "Defragment"
	HashKV             Method = "HashKV"
	AuthEnabled        Method = "AuthEnabled"
	EnableRootAuth     Method = "EnableRootAuth"
	ChangeRootPassword Method = "ChangeRootPassword"
)

// Mutating reports whether the method changes etcd (membership, leadership, alarms, or a
// member's availability): an idle reconcile must make none of these calls.
func (m Method) Mutating() bool {
	switch m {
	case MemberAddAsLearner, MemberPromote, MemberRemove, MoveLeader, AlarmDisarm, Defragment, EnableRootAuth, ChangeRootPassword:
		return true
	}
	return false
}

// Call is one recorded call. Arg renders the call's argument deterministically: the peer URLs
// joined by commas, a member ID in hex, an endpoint, "endpoint rev=N", or "member/ALARM".
type Call struct {
	Method Method
	Arg    string
}

// String renders the call as Method(Arg).
func (c Call) String() string { return string(c.Method) + "(" + c.Arg + ")" }

// callLog is the call log both fakes keep.
type callLog struct {
	mu    sync.Mutex
	calls []Call
}

func (l *callLog) record(m Method, arg string) {
	l.mu.Lock()
	l.calls = append(l.calls, Call{Method: m, Arg: arg})
	l.mu.Unlock()
}

// Calls returns a copy of the calls made so far, in order.
func (l *callLog) Calls() []Call {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// Count returns how many calls of method m were made.
func (l *callLog) Count(m Method) int {
	n := 0
	for _, c := range l.Calls() {
		if c.Method == m {
			n++
		}
	}
	return n
}

// Mutations returns the calls that change etcd, in order.
func (l *callLog) Mutations() []Call {
	var out []Call
	for _, c := range l.Calls() {
		if c.Method.Mutating() {
			out = append(out, c)
		}
	}
	return out
}

// ResetCalls clears the log, e.g. between two reconcile passes of a test.
func (l *callLog) ResetCalls() {
	l.mu.Lock()
	l.calls = nil
	l.mu.Unlock()
}

// Recorder is an etcdclient.Client that returns canned responses and errors per method and
// records every call. It knows no etcd rules; use Cluster for that. Set its fields before use;
// the zero value answers every call with empty results.
type Recorder struct {
	callLog

	mu sync.Mutex
	// Members is returned by MemberList and, as the list after the change, by the membership
	// calls.
	Members []etcdclient.Member
	// Added is the member MemberAddAsLearner returns.
	Added etcdclient.Member
	// Statuses maps an endpoint to its Status; an endpoint without one fails with
	// etcdclient.ErrUnavailable.
	Statuses map[string]etcdclient.Status
	// Alarms is returned by AlarmList.
	Alarms []etcdclient.Alarm
	// Hashes maps an endpoint to its HashKV; an endpoint without one fails with
	// etcdclient.ErrUnavailable.
	Hashes map[string]etcdclient.HashKV
	// Auth is whether AuthEnabled answers true; EnableRootAuth sets it.
	Auth bool
	// Errors holds a sticky error per method, returned by every call of that method.
	Errors map[Method]error
	// queued holds errors returned once each, before the sticky ones; see QueueErrors.
	queued map[Method][]error
}

var _ etcdclient.Client = (*Recorder)(nil)

// QueueErrors makes the next len(errs) calls of m fail with errs in order (a nil entry lets
// that call succeed); later calls fall back to Errors[m]. Use it for "not in sync twice, then
// promoted".
func (r *Recorder) QueueErrors(m Method, errs ...error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.queued == nil {
		r.queued = map[Method][]error{}
	}
	r.queued[m] = append(r.queued[m], errs...)
}

// SetError makes every call of m fail with err (nil clears it).
func (r *Recorder) SetError(m Method, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Errors == nil {
		r.Errors = map[Method]error{}
	}
	r.Errors[m] = err
}

// call records the call and returns its error, if any.
func (r *Recorder) call(m Method, arg string) error {
	r.record(m, arg)
	r.mu.Lock()
	defer r.mu.Unlock()
	if q := r.queued[m]; len(q) > 0 {
		r.queued[m] = q[1:]
		return q[0]
	}
	return r.Errors[m]
}

func (r *Recorder) members() []etcdclient.Member {
	r.mu.Lock()
	defer r.mu.Unlock()
	return cloneMembers(r.Members)
}

// MemberList implements etcdclient.Client.
func (r *Recorder) MemberList(context.Context) ([]etcdclient.Member, error) {
	if err := r.call(MemberList, ""); err != nil {
		return nil, err
	}
	return r.members(), nil
}

// LocalMemberList implements etcdclient.Client.
func (r *Recorder) LocalMemberList(_ context.Context, endpoint string) ([]etcdclient.Member, error) {
	if err := r.call(LocalMemberList, endpoint); err != nil {
		return nil, err
	}
	return r.members(), nil
}

// MemberAddAsLearner implements etcdclient.Client.
func (r *Recorder) MemberAddAsLearner(_ context.Context, peerURLs []string) (etcdclient.Member, []etcdclient.Member, error) {
	if err := r.call(MemberAddAsLearner, strings.Join(peerURLs, ",")); err != nil {
		return etcdclient.Member{}, nil, err
	}
	r.mu.Lock()
	added := cloneMember(r.Added)
	r.mu.Unlock()
	return added, r.members(), nil
}

// MemberPromote implements etcdclient.Client.
func (r *Recorder) MemberPromote(_ context.Context, id uint64) ([]etcdclient.Member, error) {
	if err := r.call(MemberPromote, etcdclient.FormatID(id)); err != nil {
		return nil, err
	}
	return r.members(), nil
}

// MemberRemove implements etcdclient.Client.
func (r *Recorder) MemberRemove(_ context.Context, id uint64) ([]etcdclient.Member, error) {
	if err := r.call(MemberRemove, etcdclient.FormatID(id)); err != nil {
		return nil, err
	}
	return r.members(), nil
}

// MoveLeader implements etcdclient.Client.
func (r *Recorder) MoveLeader(_ context.Context, to uint64) error {
	return r.call(MoveLeader, etcdclient.FormatID(to))
}

// Status implements etcdclient.Client.
func (r *Recorder) Status(_ context.Context, endpoint string) (etcdclient.Status, error) {
	if err := r.call(Status, endpoint); err != nil {
		return etcdclient.Status{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.Statuses[endpoint]
	if !ok {
		return etcdclient.Status{}, etcdclient.NewError(string(Status), etcdclient.ErrUnavailable)
	}
	st.Errors = slices.Clone(st.Errors)
	return st, nil
}

// AlarmList implements etcdclient.Client.
func (r *Recorder) AlarmList(context.Context) ([]etcdclient.Alarm, error) {
	if err := r.call(AlarmList, ""); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.Alarms), nil
}

// AlarmDisarm implements etcdclient.Client. It returns the alarm when Alarms holds it and
// removes it from Alarms.
func (r *Recorder) AlarmDisarm(_ context.Context, alarm etcdclient.Alarm) ([]etcdclient.Alarm, error) {
	if err := r.call(AlarmDisarm, alarmArg(alarm)); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.Index(r.Alarms, alarm)
	if i < 0 {
		return nil, nil
	}
	r.Alarms = slices.Delete(r.Alarms, i, i+1)
	return []etcdclient.Alarm{alarm}, nil
}

// Defragment implements etcdclient.Client.
func (r *Recorder) Defragment(_ context.Context, endpoint string) error {
	return r.call(Defragment, endpoint)
}

// HashKV implements etcdclient.Client.
func (r *Recorder) HashKV(_ context.Context, endpoint string, rev int64) (etcdclient.HashKV, error) {
	if err := r.call(HashKV, endpoint+" rev="+strconv.FormatInt(rev, 10)); err != nil {
		return etcdclient.HashKV{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.Hashes[endpoint]
	if !ok {
		return etcdclient.HashKV{}, etcdclient.NewError(string(HashKV), etcdclient.ErrUnavailable)
	}
	return h, nil
}

func alarmArg(a etcdclient.Alarm) string {
	return etcdclient.FormatID(a.MemberID) + "/" + string(a.Type)
}

func cloneMember(m etcdclient.Member) etcdclient.Member {
	m.PeerURLs = slices.Clone(m.PeerURLs)
	m.ClientURLs = slices.Clone(m.ClientURLs)
	return m
}

func cloneMembers(ms []etcdclient.Member) []etcdclient.Member {
	if ms == nil {
		return nil
	}
	out := make([]etcdclient.Member, 0, len(ms))
	for _, m := range ms {
		out = append(out, cloneMember(m))
	}
	return out
}
