package etcdcluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient/etcdfake"
)

func TestOwnedMembers(t *testing.T) {
	t.Parallel()
	c := testCluster()
	mk := func(name, owner string) etcdv1alpha2.EtcdMember {
		m := member(name, false)
		m.OwnerReferences = []metav1.OwnerReference{{UID: "x", Controller: ptr.To(true)}}
		m.OwnerReferences[0].UID = typesUID(owner)
		return m
	}
	got := ownedMembers(c, []etcdv1alpha2.EtcdMember{mk("b", "uid-c"), mk("x", "other"), mk("a", "uid-c"), member("none", false)})
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Errorf("ownedMembers = %v", got)
	}
}

func TestEndpointsUsePodIPs(t *testing.T) {
	t.Parallel()
	running := func(ip string) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}}
	}
	dormant := member("d", false)
	dormant.Spec.Dormant = true
	removed := member("r", false)
	removed.Annotations = map[string]string{etcdv1alpha2.AnnotationRemovalReason: "ScaleDown"}
	deleting := member("x", false)
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	o := testObservation(&etcdfake.Recorder{}, member("b", false), member("a", false), member("pending", true), dormant, member("nopod", false), removed, deleting)
	o.pods = map[string]*corev1.Pod{"a": running("10.0.0.2"), "b": running("10.0.0.1"), "d": running("10.0.0.9"),
		"r": running("10.0.0.7"), "x": running("10.0.0.8"),
		"pending": {Status: corev1.PodStatus{Phase: corev1.PodPending, PodIP: "10.0.0.3"}}}
	got := o.endpoints()
	if len(got) != 4 || got["b"] != "http://10.0.0.1:2379" || got["a"] != "http://10.0.0.2:2379" || got["r"] != "http://10.0.0.7:2379" || got["x"] != "http://10.0.0.8:2379" {
		t.Errorf("endpoints = %v, want a, b and the members being removed (r, x), which still vote until etcd drops them; not dormant, pending or without a Pod", got)
	}
}

// TestListedSkipsMembersEtcdDoesNotList: Status goes only to started members etcd lists, so
// that a member just removed (its Pod still terminating) or not started yet does not hold every
// pass for a timeout.
func TestListedSkipsMembersEtcdDoesNotList(t *testing.T) {
	t.Parallel()
	byMember := map[string]string{"a": "http://10.0.0.1:2379", "b": "http://10.0.0.2:2379", "gone": "http://10.0.0.3:2379", "new": "http://10.0.0.4:2379"}
	list := []etcdclient.Member{
		{ID: 1, Name: "a", PeerURLs: []string{"http://a.c.ns.svc:2380"}},
		{ID: 2, Name: "etcd-b", PeerURLs: []string{"http://b.c.ns.svc:2380"}}, // named otherwise (adopted): matched by peer URL
		{ID: 3, PeerURLs: []string{"http://new.c.ns.svc:2380"}},               // an unstarted learner cannot answer yet
	}
	got := listed(byMember, list)
	if len(got) != 2 || got[0] != "http://10.0.0.1:2379" || got[1] != "http://10.0.0.2:2379" {
		t.Errorf("listed = %v, want a and b", got)
	}
}

func TestStatusesAskEveryEndpoint(t *testing.T) {
	t.Parallel()
	rec := &etcdfake.Recorder{Statuses: map[string]etcdclient.Status{
		"http://10.0.0.1:2379": {ID: 1, Leader: 2}, "http://10.0.0.2:2379": {ID: 2, Leader: 2},
	}}
	got := statuses(context.Background(), rec, []string{"http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://10.0.0.3:2379"})
	if len(got) != 2 || got[2].Leader != 2 {
		t.Errorf("statuses = %v", got)
	}
	if n := rec.Count(etcdfake.Status); n != 3 {
		t.Errorf("Status calls = %d, want 3", n)
	}
}
