package etcdcluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
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
	p := testPass(&etcdfake.Recorder{}, member("b", false), member("a", false), member("pending", true), dormant, member("nopod", false), removed, deleting)
	p.pods = map[string]*corev1.Pod{"a": running("10.0.0.2"), "b": running("10.0.0.1"), "d": running("10.0.0.9"),
		"r": running("10.0.0.7"), "x": running("10.0.0.8"),
		"pending": {Status: corev1.PodStatus{Phase: corev1.PodPending, PodIP: "10.0.0.3"}}}
	got := p.endpoints()
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

func TestObserveStartedZeroOnFirstLookThenFirstStartedTime(t *testing.T) {
	t.Parallel()
	r := New(nil, nil, nil, nil)
	key := testPass(&etcdfake.Recorder{}).nsName()
	t0 := testPass(&etcdfake.Recorder{}).now
	started := func(id uint64) etcdclient.Member { return etcdclient.Member{ID: id, Name: "m"} }
	unstarted := func(id uint64) etcdclient.Member { return etcdclient.Member{ID: id} }
	first := r.observeStarted(key, []etcdclient.Member{started(1), unstarted(2)}, t0)
	if at, ok := first[1]; !ok || !at.IsZero() || len(first) != 1 {
		t.Fatalf("first look = %v, want member 1 at the zero time and nothing for unstarted 2", first)
	}
	later := t0.Add(3e9)
	got := r.observeStarted(key, []etcdclient.Member{started(1), started(2)}, later)
	if !got[1].IsZero() || !got[2].Equal(later) {
		t.Errorf("second look = %v, want 1 unchanged and 2 at %v", got, later)
	}
	got = r.observeStarted(key, []etcdclient.Member{started(2)}, later.Add(1e9))
	if _, ok := got[1]; ok || !got[2].Equal(later) {
		t.Errorf("after 1 left = %v", got)
	}
}

func TestMemberViewCarriesContainerStart(t *testing.T) {
	t.Parallel()
	p := testPass(&etcdfake.Recorder{}, member("m", false))
	started := p.now.Add(-2 * time.Second)
	p.pods = map[string]*corev1.Pod{"m": {
		ObjectMeta: metav1.ObjectMeta{Name: "m", UID: "pod-uid"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: desired.ContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}},
		}}},
	}}
	got := p.memberView(&p.members[0])
	if !got.PodRunning || got.PodReady || !got.ContainerStarted.Equal(started) {
		t.Errorf("memberView = running %v, ready %v, started %v; want running, not ready, started %v", got.PodRunning, got.PodReady, got.ContainerStarted, started)
	}
}

// A member counts as Ready only while the shared cache also shows its Pod Ready: the
// EtcdMember's condition lags a deleted Pod by one member-controller pass, and status counted
// such members, saying "member Pods are Ready but no member answers" about Pods that were gone
// (docs/e2e-lifecycle.md, finding 8).
func TestMemberViewReadyNeedsTheReadyPod(t *testing.T) {
	t.Parallel()
	m := member("m", false)
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: etcdv1alpha2.ConditionReady, Status: metav1.ConditionTrue, Reason: "PodReady"})
	readyPod := func(mut func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "m", UID: "pod-uid"},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
		if mut != nil {
			mut(p)
		}
		return p
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"Ready Pod", readyPod(nil), true},
		{"no Pod", nil, false},
		{"Pod being deleted", readyPod(func(p *corev1.Pod) { p.DeletionTimestamp = &now }), false},
		{"Pod failed", readyPod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), false},
	} {
		p := testPass(&etcdfake.Recorder{}, m)
		p.pods = map[string]*corev1.Pod{}
		if tc.pod != nil {
			p.pods["m"] = tc.pod
		}
		if got := p.memberView(&p.members[0]).Ready; got != tc.want {
			t.Errorf("%s: Ready %v, want %v", tc.name, got, tc.want)
		}
	}
}
