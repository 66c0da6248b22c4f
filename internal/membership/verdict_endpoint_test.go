package membership

import (
	"maps"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

func TestEndpointViews(t *testing.T) {
	t.Parallel()
	setStatus := func(s *Scope, id, applied uint64) {
		st := s.Etcd.Statuses[id]
		st.RaftAppliedIndex = applied
		s.Etcd.Statuses[id] = st
	}
	for _, tc := range []struct {
		name string
		mut  func(*Scope)
		want map[string]EndpointView
	}{
		{"all answer, in step", func(*Scope) {}, map[string]EndpointView{}},
		{"c's endpoint did not answer", func(s *Scope) { delete(s.Etcd.Statuses, 3) },
			map[string]EndpointView{"c": {Unreachable: true}}},
		{"c's Pod is not Ready: other rows classify it", func(s *Scope) {
			delete(s.Etcd.Statuses, 3)
			s.Members[2].PodReady = false
		}, map[string]EndpointView{}},
		{"b trails the leader by more than the threshold", func(s *Scope) {
			setStatus(s, 1, 5000)
			setStatus(s, 2, 5000-LagThreshold-1)
			setStatus(s, 3, 5000-LagThreshold)
		}, map[string]EndpointView{"b": {Lagging: true}}},
		{"MemberList did not answer: nobody is singled out", func(s *Scope) { s.Etcd = Etcd{} }, map[string]EndpointView{}},
		{"a learner that has not started", func(s *Scope) {
			s.Etcd.Members = append(s.Etcd.Members, etcdclient.Member{ID: 4, PeerURLs: []string{peer("d")}, IsLearner: true})
			s.Members = append(s.Members, mem("d", 4))
		}, map[string]EndpointView{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := steady3()
			tc.mut(&s)
			if got := EndpointViews(&s); !maps.Equal(got, tc.want) {
				t.Errorf("EndpointViews = %v, want %v", got, tc.want)
			}
		})
	}
}
