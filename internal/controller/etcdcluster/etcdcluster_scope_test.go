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
	p := testPass(&etcdfake.Recorder{}, member("b", false), member("a", false), member("pending", true), dormant, member("nopod", false))
	p.pods = map[string]*corev1.Pod{"a": running("10.0.0.2"), "b": running("10.0.0.1"), "d": running("10.0.0.9"),
		"pending": {Status: corev1.PodStatus{Phase: corev1.PodPending, PodIP: "10.0.0.3"}}}
	got := p.endpoints()
	if len(got) != 2 || got[0] != "http://10.0.0.1:2379" || got[1] != "http://10.0.0.2:2379" {
		t.Errorf("endpoints = %v", got)
	}
}

func TestStatusesAskEveryEndpoint(t *testing.T) {
	t.Parallel()
	rec := &etcdfake.Recorder{Statuses: map[string]etcdclient.Status{
		"http://10.0.0.1:2379": {ID: 1, Leader: 2}, "http://10.0.0.2:2379": {ID: 2, Leader: 2},
	}}
	p := testPass(rec)
	got := p.statuses(context.Background(), rec, []string{"http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://10.0.0.3:2379"})
	if len(got) != 2 || got[2].Leader != 2 {
		t.Errorf("statuses = %v", got)
	}
	if n := rec.Count(etcdfake.Status); n != 3 {
		t.Errorf("Status calls = %d, want 3", n)
	}
}

func TestObserveFirstSeenKeepsFirstTimeAndForgets(t *testing.T) {
	t.Parallel()
	r := New(nil, nil, nil, nil)
	key := testPass(&etcdfake.Recorder{}).nsName()
	t0 := testPass(&etcdfake.Recorder{}).now
	r.observeFirstSeen(key, []etcdclient.Member{{ID: 1}, {ID: 2}}, t0)
	got := r.observeFirstSeen(key, []etcdclient.Member{{ID: 2}, {ID: 3}}, t0.Add(60e9))
	if !got[2].Equal(t0) || !got[3].Equal(t0.Add(60e9)) || len(got) != 2 {
		t.Errorf("firstSeen = %v", got)
	}
}
