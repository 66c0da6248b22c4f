package etcdmember

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

func TestDecideWithoutEtcd(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		m      *etcdv1alpha2.EtcdMember
		parent parentState
		want   releaseDecision
	}{
		"parent gone: release without etcd": {
			m: member(withID("a1", true)), parent: parentGone,
			want: releaseDecision{release: true, message: "the parent EtcdCluster is gone"},
		},
		"parent deleting: release without etcd, even for a foreign deletion": {
			m: member(withID("a1", true)), parent: parentDeleting,
			want: releaseDecision{release: true, message: "the parent EtcdCluster is being deleted"},
		},
		"never joined: release": {
			m: member(pending), parent: parentPresent,
			want: releaseDecision{release: true, message: "the member never joined etcd"},
		},
		"never joined, parent unreadable: release (nothing to remove)": {
			m: member(pending), parent: parentUnreadable,
			want: releaseDecision{release: true, message: "the member never joined etcd"},
		},
		"joined, parent unreadable: hold": {
			m: member(withID("a1", true)), parent: parentUnreadable,
			want: releaseDecision{message: "the parent EtcdCluster could not be read; the finalizer is held"},
		},
		"joined: ask etcd": {
			m: member(withID("a1", true)), parent: parentPresent,
			want: releaseDecision{needMembership: true},
		},
		"added (initialCluster set) but no ID recorded yet: ask etcd": {
			m: member(), parent: parentPresent,
			want: releaseDecision{needMembership: true},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, decideWithoutEtcd(tc.m, tc.parent), cmp.AllowUnexported(releaseDecision{})); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecideWithMembership(t *testing.T) {
	t.Parallel()
	other := etcdclient.Member{ID: 0xb2, Name: "etcd-other", PeerURLs: []string{"http://etcd-other.etcd.ns.svc:2380"}}
	self := etcdclient.Member{ID: 0xa1, Name: testMember, PeerURLs: []string{"http://" + testMember + ".etcd.ns.svc:2380"}}
	unstartedSelf := etcdclient.Member{ID: 0xa1, PeerURLs: []string{"http://" + testMember + ".etcd.ns.svc:2380"}, IsLearner: true}
	removal := withAnnotation(etcdv1alpha2.AnnotationRemovalReason, "ScaleDown")
	allowed := withAnnotation(etcdv1alpha2.AnnotationAllowDeletion, "true")
	for name, tc := range map[string]struct {
		m       *etcdv1alpha2.EtcdMember
		members []etcdclient.Member
		want    releaseDecision
	}{
		"ID absent: release": {
			m: member(withID("a1", true)), members: []etcdclient.Member{other},
			want: releaseDecision{release: true, message: "the member is not in etcd's member list"},
		},
		"ID present, removal-reason: wait for MemberRemove": {
			m: member(withID("a1", true), removal), members: []etcdclient.Member{other, self},
			want: releaseDecision{message: msgWaitingForRemoval},
		},
		"ID present, allow-deletion: wait for MemberRemove": {
			m: member(withID("a1", true), allowed), members: []etcdclient.Member{self},
			want: releaseDecision{message: msgWaitingForRemoval},
		},
		"ID present, foreign deletion: blocked": {
			m: member(withID("a1", true)), members: []etcdclient.Member{self},
			want: releaseDecision{blocked: true, message: MsgDeletionBlocked},
		},
		"allow-deletion must be exactly true": {
			m: member(withID("a1", true), withAnnotation(etcdv1alpha2.AnnotationAllowDeletion, "yes")), members: []etcdclient.Member{self},
			want: releaseDecision{blocked: true, message: MsgDeletionBlocked},
		},
		"no ID yet, unstarted learner found by peer URL: hold": {
			m: member(removal), members: []etcdclient.Member{other, unstartedSelf},
			want: releaseDecision{message: msgWaitingForRemoval},
		},
		"no ID yet, found by name: hold": {
			m: member(removal), members: []etcdclient.Member{{ID: 9, Name: testMember}},
			want: releaseDecision{message: msgWaitingForRemoval},
		},
		"no ID yet, not listed: release": {
			m: member(), members: []etcdclient.Member{other},
			want: releaseDecision{release: true, message: "the member is not in etcd's member list"},
		},
		"a name that only shares a prefix does not match": {
			m: member(), members: []etcdclient.Member{{ID: 9, PeerURLs: []string{"http://" + testMember + "x.etcd.ns.svc:2380"}}},
			want: releaseDecision{release: true, message: "the member is not in etcd's member list"},
		},
		"unparsable ID: hold": {
			m: member(withID("not-hex", true), removal), members: nil,
			want: releaseDecision{message: msgWaitingForRemoval},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, decideWithMembership(tc.m, tc.members), cmp.AllowUnexported(releaseDecision{})); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}
