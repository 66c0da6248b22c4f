package etcdobserve

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/mutation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/podconn"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/podstate"
)

// PodMode is what compatibility mode (--pod) knows besides etcd's answers: the one Pod it
// reaches and the connection derived from it (docs/kubectl-etcd.md, "Compatibility mode (--pod)").
type PodMode struct {
	Pod    *corev1.Pod
	Target podconn.Target
	// MemberID is the ID the Pod's etcd answered Status with; 0 when it did not answer.
	MemberID uint64
	// StatusErr says why the Pod's etcd did not answer Status.
	StatusErr string
	// List is etcd's MemberList answer as given, URLs included.
	List []etcdclient.Member
}

// Mode is the plan and report mode of pod mode.
const Mode = "pod"

// Heading is the line every pod-mode output starts with.
func (p *PodMode) Heading() string {
	return fmt.Sprintf("pod mode: etcd's view only, through Pod %s/%s", p.Pod.Namespace, p.Pod.Name)
}

// Target reports whether m is the member the Pod runs.
func (o *Observation) Target(m Member) bool {
	return o.Pod != nil && ((o.Pod.MemberID != 0 && m.ID == o.Pod.MemberID) || (o.Pod.MemberID == 0 && m.Pod == o.Pod.Pod))
}

// Mark tags p as a pod-mode plan when o was read in pod mode.
func (o *Observation) Mark(p *mutation.Plan) {
	if o.Pod != nil {
		p.Mode, p.Note = Mode, o.Pod.Heading()
	}
}

// ReadPod is Read in pod mode: it reads Pod --pod, dials its etcd alone, and asks for the member
// list, the alarms and that member's own Status. The other members are matched with the Pods of
// the namespace named like them (both this operator and the legacy one name etcd after its Pod),
// whose Ready condition stands in for their Status answers (see Voter).
func ReadPod(ctx context.Context, d *invocation.Deps) (*Observation, *invocation.EtcdSession, error) {
	pod := &corev1.Pod{}
	if err := d.Kube.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: d.Globals.Pod}, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, invocation.Usagef("--pod: Pod %s/%s not found (use -n to pick another namespace)", d.Namespace, d.Globals.Pod)
		}
		return nil, nil, fmt.Errorf("reading Pod %s/%s: %w", d.Namespace, d.Globals.Pod, err)
	}
	t, err := podconn.Derive(pod)
	if err != nil {
		return nil, nil, invocation.Usagef("--pod %s: %v", pod.Name, err)
	}
	dctx, cancel := context.WithTimeout(ctx, d.Globals.Timeout)
	defer cancel()
	sess, err := d.Dialer.DialPod(dctx, pod)
	if err != nil {
		return nil, nil, fmt.Errorf("reaching the etcd of Pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	o, err := observePod(ctx, d, sess, &PodMode{Pod: pod, Target: t})
	if err != nil {
		_ = sess.Close()
		return nil, nil, err
	}
	return o, sess, nil
}

func observePod(ctx context.Context, d *invocation.Deps, sess *invocation.EtcdSession, pm *PodMode) (*Observation, error) {
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
	pm.List = list
	pods, err := namespacePods(ctx, d.Kube, pm.Pod.Namespace)
	if err != nil {
		return nil, err
	}
	ep := sess.Endpoints[pm.Pod.Name]
	sctx, scancel := context.WithTimeout(ctx, d.Globals.Timeout)
	defer scancel()
	st, err := sess.Status(sctx, ep)
	if err != nil {
		pm.StatusErr = err.Error()
	} else {
		pm.MemberID = st.ID
	}
	o := &Observation{State: standIn(pm), Alarms: alarms, Pod: pm}
	for _, e := range list {
		m := Member{Name: e.Name, ID: e.ID, Learner: e.IsLearner, Started: e.Started()}
		if m.Name == "" {
			m.Name = e.IDHex()
		}
		m.Pod = pods[e.Name]
		o.Members = append(o.Members, m)
	}
	for i := range o.Members {
		m := &o.Members[i]
		switch {
		case pm.MemberID != 0 && m.ID == pm.MemberID:
			// The Pod answered as this member, whatever etcd names it.
			m.Pod, m.Endpoint, m.Status = pm.Pod, ep, &st
		case pm.MemberID == 0 && (m.Name == pm.Target.Member || m.Name == pm.Pod.Name):
			m.Pod, m.Endpoint, m.StatusErr = pm.Pod, ep, pm.StatusErr
		default:
			m.StatusErr = "not asked: pod mode asks only the etcd of Pod " + pm.Pod.Name
		}
	}
	slices.SortFunc(o.Members, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return o, nil
}

// namespacePods are the Pods of ns by name.
func namespacePods(ctx context.Context, r client.Reader, ns string) (map[string]*corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the Pods of namespace %s: %w", ns, err)
	}
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// standIn is the EtcdCluster the planners read in pod mode, where there is none: the Pod's
// namespace and name, which plans and messages print, and the backend quota the Pod's etcd runs
// with (its --quota-backend-bytes, else etcd's default through an explicit 0), which the NOSPACE
// check compares database sizes with. Nothing else of it is set or read.
func standIn(pm *PodMode) *clusterread.State {
	q := pm.Target.QuotaBackendBytes
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: pm.Pod.Namespace, Name: pm.Pod.Name},
		Spec:       etcdv1alpha2.EtcdClusterSpec{Options: &etcdv1alpha2.EtcdOptions{QuotaBackendBytes: &q}},
	}
	return &clusterread.State{Cluster: c, Pods: map[string]*corev1.Pod{}}
}

// podAnswers is pod mode's stand-in for a Status answer of a member other than the Pod's own,
// which one port-forward cannot ask: its Pod is Running and Ready, i.e. the kubelet's readiness
// probe (etcd's /readyz or /health in both operators' Pods) passed within its period. It is
// weaker evidence than an answer, which is why pod-mode defrag wants a quorum margin of one
// more than the member it stalls (docs/kubectl-etcd.md, "Compatibility mode (--pod)").
func (o *Observation) podAnswers(m Member) bool {
	return o.Pod != nil && !o.Target(m) && m.Pod != nil && podstate.Running(m.Pod) && podstate.ReadyCondition(m.Pod)
}

// Quota is the backend quota the observed members run with.
func (o *Observation) Quota() int64 { return Quota(o.State.Cluster) }
