package membership

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

func TestNextMinorSince(t *testing.T) {
	t.Parallel()
	st := func(id uint64, v string, committed, applied uint64) etcdclient.Status {
		return etcdclient.Status{ID: id, Version: v, RaftIndex: committed, RaftAppliedIndex: applied}
	}
	three := func(a, b, c etcdclient.Status) MinorInput {
		return MinorInput{Known: true, Members: []uint64{1, 2, 3}, Latched: "3.6.16",
			Statuses: map[uint64]etcdclient.Status{1: a, 2: b, 3: c}}
	}
	at36 := &etcdv1alpha2.MinorSince{Minor: "3.6", RaftIndex: 500}
	for _, tt := range []struct {
		name string
		prev *etcdv1alpha2.MinorSince
		in   MinorInput
		want *etcdv1alpha2.MinorSince
	}{
		{
			name: "a cluster this operator forms has nothing older in its log",
			in:   MinorInput{Forming: true, Latched: "3.6.16"},
			want: &etcdv1alpha2.MinorSince{Minor: "3.6", Snapshotted: true},
		},
		{
			name: "forming before a target is latched records nothing",
			in:   MinorInput{Forming: true},
		},
		{
			name: "a cluster seen first with a history: recorded from the highest committed index",
			in:   three(st(1, "3.6.16", 500, 490), st(2, "3.6.16", 498, 498), st(3, "3.6.16", 499, 470)),
			want: &etcdv1alpha2.MinorSince{Minor: "3.6", RaftIndex: 500},
		},
		{
			name: "a member that did not answer changes nothing",
			prev: &etcdv1alpha2.MinorSince{Minor: "3.5", Snapshotted: true},
			in: MinorInput{Known: true, Members: []uint64{1, 2, 3}, Statuses: map[uint64]etcdclient.Status{
				1: st(1, "3.6.16", 900, 900), 2: st(2, "3.6.16", 900, 900)}},
			want: &etcdv1alpha2.MinorSince{Minor: "3.5", Snapshotted: true},
		},
		{
			name: "an unknown member list changes nothing",
			prev: at36,
			in:   MinorInput{Statuses: map[uint64]etcdclient.Status{1: st(1, "3.6.16", 90_000, 90_000)}},
			want: at36,
		},
		{
			name: "mid roll the lowest minor stands",
			prev: &etcdv1alpha2.MinorSince{Minor: "3.5", Snapshotted: true},
			in:   three(st(1, "3.6.16", 800, 800), st(2, "3.5.35", 800, 800), st(3, "3.6.16", 800, 800)),
			want: &etcdv1alpha2.MinorSince{Minor: "3.5", Snapshotted: true},
		},
		{
			name: "every member on the next minor: recorded, not snapshotted",
			prev: &etcdv1alpha2.MinorSince{Minor: "3.5", Snapshotted: true},
			in:   three(st(1, "3.6.16", 800, 800), st(2, "3.6.16", 801, 799), st(3, "3.6.16", 800, 800)),
			want: &etcdv1alpha2.MinorSince{Minor: "3.6", RaftIndex: 801},
		},
		{
			name: "one member short of the interval and margin",
			prev: at36,
			in:   three(st(1, "3.6.16", 20_000, 20_000), st(2, "3.6.16", 20_000, 11_500), st(3, "3.6.16", 20_000, 20_000)),
			want: at36,
		},
		{
			name: "every member beyond the interval and margin",
			prev: at36,
			in:   three(st(1, "3.6.16", 20_000, 20_000), st(2, "3.6.16", 20_000, 11_501), st(3, "3.6.16", 20_000, 20_000)),
			want: &etcdv1alpha2.MinorSince{Minor: "3.6", RaftIndex: 500, Snapshotted: true},
		},
		{
			name: "a configured snapshot count shortens the wait",
			prev: at36,
			in: func() MinorInput {
				in := three(st(1, "3.6.16", 2_000, 1_601), st(2, "3.6.16", 2_000, 2_000), st(3, "3.6.16", 2_000, 2_000))
				in.SnapshotCount = 100
				return in
			}(),
			want: &etcdv1alpha2.MinorSince{Minor: "3.6", RaftIndex: 500, Snapshotted: true},
		},
		{
			name: "snapshotted stays snapshotted",
			prev: &etcdv1alpha2.MinorSince{Minor: "3.6", RaftIndex: 500, Snapshotted: true},
			in:   three(st(1, "3.6.16", 600, 600), st(2, "3.6.16", 600, 600), st(3, "3.6.16", 600, 600)),
			want: &etcdv1alpha2.MinorSince{Minor: "3.6", RaftIndex: 500, Snapshotted: true},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, NextMinorSince(tt.prev, tt.in)); diff != "" {
				t.Errorf("nextMinorSince (-want +got):\n%s", diff)
			}
		})
	}
}
