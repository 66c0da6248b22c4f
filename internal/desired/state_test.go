package desired

import (
	"errors"
	"testing"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func TestInitialClusterState(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		bootstrap       bool
		memberID        string
		parentClusterID string
		parentReadable  bool
		want            ClusterState
		wantErr         error
	}{
		{"seed before the cluster formed", true, "", "", true, ClusterStateNew, nil},
		{"seed after its member ID was seen", true, "8e9e05c52164694d", "", true, ClusterStateExisting, nil},
		{"seed after the cluster ID latched", true, "", "cdf818194e3a8c32", true, ClusterStateExisting, nil},
		{"seed, both known", true, "8e9e05c52164694d", "cdf818194e3a8c32", true, ClusterStateExisting, nil},
		{"learner of a forming cluster", false, "", "", true, ClusterStateExisting, nil},
		{"learner", false, "", "cdf818194e3a8c32", true, ClusterStateExisting, nil},
		{"voter", false, "91bc3c398fb3c146", "cdf818194e3a8c32", true, ClusterStateExisting, nil},
		{"unreadable parent fails closed for the seed", true, "", "", false, "", ErrParentUnreadable},
		{"unreadable parent fails closed for others", false, "91bc3c398fb3c146", "cdf818194e3a8c32", false, "", ErrParentUnreadable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newMember(func(m *etcdv1alpha2.EtcdMember) {
				m.Spec.Bootstrap = tc.bootstrap
				m.Status.MemberID = tc.memberID
			})
			got, err := InitialClusterState(m, tc.parentClusterID, tc.parentReadable)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("InitialClusterState() error = %v, want %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("InitialClusterState() = %q, want %q", got, tc.want)
			}
		})
	}
}
