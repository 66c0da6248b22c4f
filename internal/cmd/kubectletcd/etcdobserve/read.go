// Package etcdobserve is what the commands that act on etcd see of a cluster: etcd's member list,
// each member's own Status answer through its Pod, and the active alarms, joined with the
// EtcdMembers and Pods that clusterread reads. Health is folded the way the operator folds it
// for its quorum gate (docs/design/quorum.md, "Vocabulary"), so that a command's checks agree
// with the operator's.
package etcdobserve

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// Member is one member etcd lists, joined with its EtcdMember and Pod.
type Member struct {
	// Name is the EtcdMember's name (also its Pod's and its etcd --name); etcd's name or the
	// hex ID when no EtcdMember matches.
	Name    string
	ID      uint64
	Learner bool
	// Started is false while etcd lists the member without a name: added, never started.
	Started bool
	// CR and Pod are nil when the member has none.
	CR  *etcdv1alpha2.EtcdMember
	Pod *corev1.Pod
	// Endpoint reaches the member's own Pod in the session's per-member calls; empty when the
	// member's Pod could not be reached.
	Endpoint string
	// Status is the member's own answer; nil when it did not answer.
	Status *etcdclient.Status
	// StatusErr says why Status is nil.
	StatusErr string
}

// Observation is one look at a cluster's etcd.
type Observation struct {
	State *clusterread.State
	// Members are the members etcd lists, sorted by name.
	Members []Member
	// Alarms are the active alarms.
	Alarms []etcdclient.Alarm
	// Pod is set in pod mode; State then holds a stand-in cluster (see ReadPod).
	Pod *PodMode
}

// Read reads cluster name from the API server, dials its etcd through every member Pod, and
// asks for the member list, the alarms and each member's Status, each call bounded by
// --timeout. The caller closes the session it returns, which later calls go through. With
// --pod it is ReadPod, and name is unused.
func Read(ctx context.Context, d *invocation.Deps, name string) (*Observation, *invocation.EtcdSession, error) {
	if d.Globals.PodMode() {
		return ReadPod(ctx, d)
	}
	s, err := clusterread.Read(ctx, d.Kube, d.Namespace, name, clusterread.Options{Pods: true})
	if err != nil {
		return nil, nil, err
	}
	pods := s.MemberPods()
	if len(pods) == 0 {
		return nil, nil, fmt.Errorf("no member Pod of %s/%s exists to reach etcd through (spec.replicas is %d)", s.Cluster.Namespace, s.Cluster.Name, clusterread.Replicas(s.Cluster))
	}
	dctx, cancel := context.WithTimeout(ctx, d.Globals.Timeout)
	defer cancel()
	sess, err := d.Dialer.Dial(dctx, s.Cluster, pods)
	if err != nil {
		return nil, nil, fmt.Errorf("reaching the etcd of %s/%s: %w", s.Cluster.Namespace, s.Cluster.Name, err)
	}
	o, err := observe(ctx, d, s, sess)
	if err != nil {
		_ = sess.Close()
		return nil, nil, err
	}
	return o, sess, nil
}

func observe(ctx context.Context, d *invocation.Deps, s *clusterread.State, sess *invocation.EtcdSession) (*Observation, error) {
	cctx, cancel := context.WithTimeout(ctx, d.Globals.Timeout)
	defer cancel()
	list, err := sess.MemberList(cctx)
	if err != nil {
		return nil, fmt.Errorf("etcd MemberList: %w", err)
	}
	alarms, err := sess.AlarmList(cctx)
	if err != nil {
		return nil, fmt.Errorf("etcd AlarmList: %w", err)
	}
	o := &Observation{State: s, Alarms: alarms}
	for _, e := range list {
		o.Members = append(o.Members, join(s, sess, e))
	}
	slices.SortFunc(o.Members, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	askStatus(ctx, d, sess, o.Members)
	return o, nil
}

// join finds e's EtcdMember by status.memberID, else by name (the member's etcd --name is its
// EtcdMember's name), and its Pod and endpoint.
func join(s *clusterread.State, sess *invocation.EtcdSession, e etcdclient.Member) Member {
	m := Member{Name: e.Name, ID: e.ID, Learner: e.IsLearner, Started: e.Started()}
	i := slices.IndexFunc(s.Members, func(cr etcdv1alpha2.EtcdMember) bool { return cr.Status.MemberID == e.IDHex() })
	if i < 0 && e.Name != "" {
		i = slices.IndexFunc(s.Members, func(cr etcdv1alpha2.EtcdMember) bool { return cr.Name == e.Name })
	}
	if i >= 0 {
		m.CR = &s.Members[i]
		m.Name = m.CR.Name
		m.Pod = s.Pods[m.CR.Name]
	}
	if m.Name == "" {
		m.Name = e.IDHex()
	}
	if m.Pod != nil {
		m.Endpoint = sess.Endpoints[m.Pod.Name]
	}
	return m
}

// askStatus asks every reachable member for its Status in parallel. An answer from another
// member than the one asked (a Pod reused by another member) is no answer.
func askStatus(ctx context.Context, d *invocation.Deps, sess *invocation.EtcdSession, ms []Member) {
	var wg sync.WaitGroup
	for i := range ms {
		m := &ms[i]
		if m.Endpoint == "" {
			m.StatusErr = "its Pod is not running"
			continue
		}
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, d.Globals.Timeout)
			defer cancel()
			st, err := sess.Status(sctx, m.Endpoint)
			switch {
			case err != nil:
				m.StatusErr = err.Error()
			case st.ID != m.ID:
				m.StatusErr = fmt.Sprintf("its endpoint answered as member %s", etcdclient.FormatID(st.ID))
			default:
				m.Status = &st
			}
		})
	}
	wg.Wait()
}
