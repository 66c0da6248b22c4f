package etcdfake_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
)

func TestRecorderCannedResponses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	members := []etcdclient.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a:2380"}}}
	r := &etcdfake.Recorder{
		Members:  members,
		Added:    etcdclient.Member{ID: 2, PeerURLs: []string{"http://b:2380"}, IsLearner: true},
		Statuses: map[string]etcdclient.Status{"http://a:2379": {ID: 1, Leader: 1}},
	}
	got, err := r.MemberList(ctx)
	if err != nil || !cmp.Equal(got, members) {
		t.Fatalf("MemberList: %v, %v", got, err)
	}
	got[0].PeerURLs[0] = "mutated"
	if r.Members[0].PeerURLs[0] != "http://a:2380" {
		t.Fatalf("MemberList returned shared slices")
	}
	added, _, err := r.MemberAddAsLearner(ctx, []string{"http://b:2380"})
	if err != nil || added.ID != 2 {
		t.Fatalf("MemberAddAsLearner: %+v, %v", added, err)
	}
	if st, err := r.Status(ctx, "http://a:2379"); err != nil || !st.IsLeader() {
		t.Fatalf("Status: %+v, %v", st, err)
	}
	if _, err := r.Status(ctx, "http://gone:2379"); !errors.Is(err, etcdclient.ErrUnavailable) {
		t.Fatalf("Status of an unknown endpoint: %v", err)
	}
}

func TestRecorderErrors(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := &etcdfake.Recorder{}
	notReady := etcdclient.NewError("MemberPromote", etcdclient.ErrLearnerNotReady)
	r.QueueErrors(etcdfake.MemberPromote, notReady, notReady)
	for i := range 2 {
		if _, err := r.MemberPromote(ctx, 0xabc); !errors.Is(err, etcdclient.ErrLearnerNotReady) {
			t.Fatalf("promote %d: %v", i, err)
		}
	}
	if _, err := r.MemberPromote(ctx, 0xabc); err != nil {
		t.Fatalf("third promote: %v", err)
	}
	r.SetError(etcdfake.MemberRemove, etcdclient.NewError("MemberRemove", etcdclient.ErrNoLeader))
	if _, err := r.MemberRemove(ctx, 0xdef); !errors.Is(err, etcdclient.ErrNoLeader) {
		t.Fatalf("remove: %v", err)
	}
	if _, err := r.AlarmList(ctx); err != nil {
		t.Fatalf("AlarmList unaffected: %v", err)
	}
	want := []etcdfake.Call{
		{Method: etcdfake.MemberPromote, Arg: "abc"},
		{Method: etcdfake.MemberPromote, Arg: "abc"},
		{Method: etcdfake.MemberPromote, Arg: "abc"},
		{Method: etcdfake.MemberRemove, Arg: "def"},
		{Method: etcdfake.AlarmList},
	}
	if diff := cmp.Diff(want, r.Calls()); diff != "" {
		t.Fatalf("calls (-want +got):\n%s", diff)
	}
	if r.Count(etcdfake.MemberPromote) != 3 || len(r.Mutations()) != 4 {
		t.Fatalf("count %d, mutations %v", r.Count(etcdfake.MemberPromote), r.Mutations())
	}
	r.ResetCalls()
	if len(r.Calls()) != 0 {
		t.Fatalf("ResetCalls left %v", r.Calls())
	}
	if got := (etcdfake.Call{Method: etcdfake.HashKV, Arg: "http://a:2379 rev=5"}).String(); got != "HashKV(http://a:2379 rev=5)" {
		t.Fatalf("Call.String() = %q", got)
	}
}

func TestRecorderAlarmDisarm(t *testing.T) {
	t.Parallel()
	a := etcdclient.Alarm{MemberID: 7, Type: etcdclient.AlarmNoSpace}
	r := &etcdfake.Recorder{Alarms: []etcdclient.Alarm{a}}
	got, err := r.AlarmDisarm(t.Context(), a)
	if err != nil || len(got) != 1 || len(r.Alarms) != 0 {
		t.Fatalf("AlarmDisarm: %v, %v, left %v", got, err, r.Alarms)
	}
	if r.Calls()[0].Arg != "7/NOSPACE" {
		t.Fatalf("call arg %q", r.Calls()[0].Arg)
	}
}
