package divergence_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/etcd-operator/etcd-operator/internal/divergence"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// answer is member id's HashKV at rev after compaction compact.
func answer(id uint64, rev, compact int64, hash uint32) etcdclient.HashKV {
	return etcdclient.HashKV{MemberID: id, HashRevision: rev, CompactRevision: compact, Hash: hash, Revision: rev + 7}
}

func answers(as ...etcdclient.HashKV) map[uint64]etcdclient.HashKV {
	out := map[uint64]etcdclient.HashKV{}
	for _, a := range as {
		out[a.MemberID] = a
	}
	return out
}

func TestCompare(t *testing.T) {
	t.Parallel()
	three := []uint64{1, 2, 3}
	five := []uint64{1, 2, 3, 4, 5}
	for name, tc := range map[string]struct {
		voters  []uint64
		answers map[uint64]etcdclient.HashKV
		want    divergence.Result
	}{
		"all equal": {three, answers(answer(1, 40, 0, 9), answer(2, 40, 0, 9), answer(3, 40, 0, 9)),
			divergence.Result{Outcome: divergence.Consistent, Revision: 40}},
		"majority names the odd one out": {three, answers(answer(1, 40, 0, 9), answer(2, 40, 0, 7), answer(3, 40, 0, 9)),
			divergence.Result{Outcome: divergence.Diverged, Revision: 40, Named: []uint64{2}}},
		"five voters, two odd ones with different hashes": {five,
			answers(answer(1, 40, 5, 9), answer(2, 40, 5, 7), answer(3, 40, 5, 9), answer(4, 40, 5, 9), answer(5, 40, 5, 8)),
			divergence.Result{Outcome: divergence.Diverged, Revision: 40, Named: []uint64{2, 5}}},
		"two voters differ: nobody can tell which is wrong": {[]uint64{1, 2}, answers(answer(1, 40, 0, 9), answer(2, 40, 0, 7)),
			divergence.Result{Outcome: divergence.Undecided, Revision: 40, Differing: []uint64{1, 2}}},
		"two voters agree": {[]uint64{1, 2}, answers(answer(1, 40, 0, 9), answer(2, 40, 0, 9)),
			divergence.Result{Outcome: divergence.Consistent, Revision: 40}},
		"tie of four": {[]uint64{1, 2, 3, 4}, answers(answer(1, 40, 0, 9), answer(2, 40, 0, 7), answer(3, 40, 0, 9), answer(4, 40, 0, 7)),
			divergence.Result{Outcome: divergence.Undecided, Revision: 40, Differing: []uint64{1, 2, 3, 4}}},
		"three different hashes": {three, answers(answer(1, 40, 0, 1), answer(2, 40, 0, 2), answer(3, 40, 0, 3)),
			divergence.Result{Outcome: divergence.Undecided, Revision: 40, Differing: []uint64{1, 2, 3}}},
		"compaction mismatch: the other compaction is not comparable, nor named": {three,
			answers(answer(1, 40, 30, 9), answer(2, 40, 0, 7), answer(3, 40, 30, 9)),
			divergence.Result{Outcome: divergence.Incomplete, Revision: 40}},
		"compaction mismatch without a majority in either": {three,
			answers(answer(1, 40, 30, 9), answer(2, 40, 0, 7), answer(3, 40, 0, 8)),
			divergence.Result{Outcome: divergence.Undecided, Revision: 40, Differing: []uint64{2, 3}}},
		"member missing its answer, the rest agree": {three, answers(answer(1, 40, 0, 9), answer(3, 40, 0, 9)),
			divergence.Result{Outcome: divergence.Incomplete, Revision: 40}},
		"member missing its answer, the rest differ: no majority of all voters": {three, answers(answer(1, 40, 0, 9), answer(3, 40, 0, 7)),
			divergence.Result{Outcome: divergence.Undecided, Revision: 40, Differing: []uint64{1, 3}}},
		"five voters, one silent, three agree: still a majority of all five": {five,
			answers(answer(1, 40, 0, 9), answer(2, 40, 0, 9), answer(3, 40, 0, 9), answer(4, 40, 0, 7)),
			divergence.Result{Outcome: divergence.Diverged, Revision: 40, Named: []uint64{4}}},
		"an answer for another revision counts as none": {three, answers(answer(1, 40, 0, 9), answer(2, 41, 0, 7), answer(3, 40, 0, 9)),
			divergence.Result{Outcome: divergence.Incomplete, Revision: 40}},
		"an answer from a member that is not a voter counts as none": {three,
			answers(answer(1, 40, 0, 9), answer(3, 40, 0, 9), answer(4, 40, 0, 7)),
			divergence.Result{Outcome: divergence.Incomplete, Revision: 40}},
		"no answers": {three, nil, divergence.Result{Outcome: divergence.Incomplete, Revision: 40}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := divergence.Compare(tc.voters, 40, tc.answers)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Compare (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompareAnswerUnderAnotherID(t *testing.T) {
	t.Parallel()
	// An endpoint that answers for another member (a Pod IP reused) must not vote twice.
	as := answers(answer(1, 40, 0, 9), answer(3, 40, 0, 9))
	as[2] = answer(1, 40, 0, 9)
	got := divergence.Compare([]uint64{1, 2, 3}, 40, as)
	if got.Outcome != divergence.Incomplete {
		t.Errorf("Outcome %s, want %s", got.Outcome, divergence.Incomplete)
	}
}

func TestRevision(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		revs []int64
		want int64
		ok   bool
	}{
		"lowest of all":  {[]int64{52, 50, 51}, 50, true},
		"none":           {nil, 0, false},
		"empty keyspace": {[]int64{1, 0}, 0, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, ok := divergence.Revision(tc.revs)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Revision(%v) = %d, %t; want %d, %t", tc.revs, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestMessage(t *testing.T) {
	t.Parallel()
	name := func(id uint64) string { return map[uint64]string{1: "etcd-a", 2: "etcd-b", 3: "etcd-c"}[id] }
	for _, tc := range []struct {
		r    divergence.Result
		want string
	}{
		{divergence.Result{Outcome: divergence.Diverged, Revision: 40, Named: []uint64{3}},
			"the keyspace hash of etcd-c differs from the majority at revision 40"},
		{divergence.Result{Outcome: divergence.Undecided, Revision: 40, Differing: []uint64{2, 1}},
			"the keyspace hashes of etcd-a, etcd-b differ at revision 40 and no majority of voters agrees, so the operator cannot tell which is wrong and replaces none: compare the members' data (etcdctl endpoint hashkv --cluster) and annotate the wrong one with replace"},
		{divergence.Result{Outcome: divergence.Consistent, Revision: 40}, ""},
		{divergence.Result{}, ""},
	} {
		if got := tc.r.Message(name); got != tc.want {
			t.Errorf("Message(%+v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}
