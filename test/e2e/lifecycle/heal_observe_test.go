//go:build e2e

package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/traffic"
)

// What the heal scenarios (heal_*_test.go) observe while a fault runs: the write traffic that
// must lose no acknowledged write, and the history of the cluster's objects as the API server's
// watches deliver it.

// healMinAcked is how many acknowledged puts a heal scenario's traffic must reach for its
// linearizability check to count: at trafficRate (half of it puts) even the shortest scenario
// writes several hundred.
const healMinAcked = 100

// healLoad is write traffic against a cluster's voters, following their Pod IPs as members are
// replaced or recreated (the pattern of TestScaleUnderTraffic).
type healLoad struct {
	gen       *traffic.Generator
	cancel    context.CancelFunc
	done      chan struct{}
	res       *traffic.Result
	err       error
	stopWatch func()
}

// startLoad starts traffic against the cluster's voter Pods and waits for its first 50
// acknowledged writes, so that the fault lands in a running workload, and until every member
// has run for etcd's strict-reconfiguration settle time (waitSettled).
func startLoad(f *framework.Test, name string) *healLoad {
	f.T.Helper()
	access := accessOf(f, name)
	endpoints, err := f.MemberEndpoints(f.Ctx, f.Namespace, voterSelector(name), access != nil)
	if err != nil {
		f.T.Fatal(err)
	}
	l := &healLoad{
		gen: traffic.New(traffic.Config{
			Endpoints: endpoints, Rate: trafficRate, MaxRequests: 1_000_000, MaxDuration: 30 * time.Minute, TLS: access,
		}),
		done: make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(f.Ctx)
	l.cancel = cancel
	go func() {
		defer close(l.done)
		l.res, l.err = l.gen.Run(ctx)
	}()
	// Traffic must end before the test: a cleanup registered after FollowEndpoints' runs first.
	l.stopWatch = f.FollowEndpoints(l.gen, voterSelector(name), access != nil)
	f.T.Cleanup(func() { cancel(); <-l.done })
	waitAcked(f, l.gen, 50)
	waitSettled(f, name)
	return l
}

// waitSettled waits until every member's etcd container has run for
// membership.StrictReconfigSettle (plus a second: startedAt has second resolution). etcd refuses
// a member add until its leader has been connected that long to a quorum of the grown cluster,
// so a replacement right after bootstrap would wait for it and the heal time would measure the
// cluster's youth; a cluster in service has been up longer (TestLifecycleTimings waits for the
// same reason).
func waitSettled(f *framework.Test, name string) {
	f.T.Helper()
	settle := membership.StrictReconfigSettle + time.Second
	err := f.Poll("members up for "+settle.String(), time.Minute, func(ctx context.Context) (bool, string, error) {
		pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
		if err != nil {
			return false, errState(ctx, err), nil
		}
		var young []string
		for _, p := range pods.Items {
			for _, st := range p.Status.ContainerStatuses {
				if st.Name == desired.ContainerName && (st.State.Running == nil || time.Since(st.State.Running.StartedAt.Time) < settle) {
					young = append(young, p.Name)
				}
			}
		}
		return len(young) == 0, fmt.Sprintf("up for less than %s: %v", settle, young), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
}

// acked is the number of acknowledged puts so far.
func (l *healLoad) acked() int64 { return l.gen.Stats().AckedPuts }

// verify waits for 50 more acknowledged writes (the healed cluster takes writes again through
// the Pods it has now), stops the traffic and fails the test unless its history is
// linearizable, no acknowledged write is missing from the final state and at least
// healMinAcked puts were acknowledged (framework.VerifyTraffic, which also records the longest
// write gap).
func (l *healLoad) verify(f *framework.Test, note string) {
	f.T.Helper()
	waitAcked(f, l.gen, l.acked()+50)
	l.cancel()
	<-l.done
	l.stopWatch()
	if l.err != nil {
		f.T.Fatalf("traffic: %v", l.err)
	}
	f.VerifyTraffic(l.res, healMinAcked, note)
}

var (
	watchClientOnce sync.Once
	watchClient     client.WithWatch
	errWatchClient  error
)

// wc returns a controller-runtime client that can watch the project's types and the core ones,
// built once per run.
func wc(f *framework.Test) client.WithWatch {
	f.T.Helper()
	watchClientOnce.Do(func() {
		scheme := runtime.NewScheme()
		errWatchClient = errors.Join(clientgoscheme.AddToScheme(scheme), etcdv1alpha2.AddToScheme(scheme))
		if errWatchClient == nil {
			watchClient, errWatchClient = client.NewWithWatch(f.RESTConfig, client.Options{Scheme: scheme})
		}
	})
	if errWatchClient != nil {
		f.T.Fatal(errWatchClient)
	}
	return watchClient
}

// clusterSeen is one version of the EtcdCluster's status.
type clusterSeen struct {
	at           time.Time
	readyMembers int32
	conditions   []metav1.Condition
}

// memberSeen is one version of an EtcdMember, or its removal (gone).
type memberSeen struct {
	at            time.Time
	uid           string
	gone          bool
	deleting      bool
	removalReason string
	healthy       *metav1.Condition
}

// pvcSeen is one version of a data PVC, or its removal.
type pvcSeen struct {
	at       time.Time
	uid      string
	gone     bool
	deleting bool
}

// history keeps every version of one cluster's EtcdCluster, EtcdMembers and data PVCs that the
// API server's watches deliver while a fault runs. A watch delivers each write, so a state the
// operator held only between two of its passes (a member's Healthy=False just before its
// removal, a cluster status with 2 Ready members during a 1-second replacement) is seen, where
// sampling could miss it; and an object deleted and recreated in between is seen deleted.
type history struct {
	name string
	mu   sync.Mutex
	// clusters, members and pvcs are in delivery order; members and pvcs by object name.
	clusters []clusterSeen
	members  map[string][]memberSeen
	pvcs     map[string][]pvcSeen
	// errs are watch errors (a watch that could not be re-established leaves a gap).
	errs []string
	stop func()
}

// watchHistory starts watching the cluster's objects in the test namespace; the watches end
// when stop is called or the test ends.
func watchHistory(f *framework.Test, name string) *history {
	h := &history{name: name, members: map[string][]memberSeen{}, pvcs: map[string][]pvcSeen{}}
	ctx, cancel := context.WithCancel(f.Ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		h.follow(ctx, f, &etcdv1alpha2.EtcdClusterList{}, nil, func(t watch.EventType, obj client.Object) {
			if ec, ok := obj.(*etcdv1alpha2.EtcdCluster); ok && ec.Name == name && t != watch.Deleted {
				h.addCluster(ec)
			}
		})
	})
	wg.Go(func() {
		h.follow(ctx, f, &etcdv1alpha2.EtcdMemberList{}, nil, func(t watch.EventType, obj client.Object) {
			if m, ok := obj.(*etcdv1alpha2.EtcdMember); ok && m.Spec.ClusterName == name {
				h.addMember(m, t == watch.Deleted)
			}
		})
	})
	wg.Go(func() {
		h.follow(ctx, f, &corev1.PersistentVolumeClaimList{}, client.MatchingLabels{etcdv1alpha2.LabelCluster: name},
			func(t watch.EventType, obj client.Object) {
				if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok {
					h.addPVC(pvc, t == watch.Deleted)
				}
			})
	})
	var once sync.Once
	h.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	f.T.Cleanup(h.stop)
	return h
}

// watchRetry spaces attempts to re-establish a watch that ended.
const watchRetry = 200 * time.Millisecond

// follow watches list's kind in the test namespace and hands every event to on, re-establishing
// the watch from the last resourceVersion seen when the API server ends it, until ctx ends.
func (h *history) follow(ctx context.Context, f *framework.Test, list client.ObjectList, match client.ListOption, on func(watch.EventType, client.Object)) {
	rv := ""
	for ctx.Err() == nil {
		opts := []client.ListOption{client.InNamespace(f.Namespace), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}}}
		if match != nil {
			opts = append(opts, match)
		}
		w, err := wc(f).Watch(ctx, list, opts...)
		if err != nil {
			if ctx.Err() == nil {
				h.addErr(fmt.Sprintf("watching %T: %v", list, err))
			}
			rv = ""
			sleepCtx(ctx, watchRetry)
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				if ctx.Err() != nil {
					break // stopped: the error only reports the cancellation
				}
				// Typically 410 Gone: the resourceVersion is too old; start again from a list.
				h.addErr(fmt.Sprintf("watch %T: %v", list, apiStatus(ev.Object)))
				rv = ""
				break
			}
			obj, ok := ev.Object.(client.Object)
			if !ok {
				continue
			}
			rv = obj.GetResourceVersion()
			on(ev.Type, obj)
		}
		w.Stop()
	}
}

func apiStatus(obj runtime.Object) string {
	if st, ok := obj.(*metav1.Status); ok {
		return st.Message
	}
	return fmt.Sprintf("%T", obj)
}

// sleepCtx waits d or until ctx ends; it paces retries of a background watch, not a test step.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (h *history) addErr(e string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.errs) < 10 {
		h.errs = append(h.errs, e)
	}
}

func (h *history) addCluster(ec *etcdv1alpha2.EtcdCluster) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clusters = append(h.clusters, clusterSeen{at: time.Now(), readyMembers: ec.Status.ReadyMembers, conditions: slices.Clone(ec.Status.Conditions)})
}

func (h *history) addMember(m *etcdv1alpha2.EtcdMember, gone bool) {
	seen := memberSeen{
		at: time.Now(), uid: string(m.UID), gone: gone, deleting: m.DeletionTimestamp != nil,
		removalReason: m.Annotations[etcdv1alpha2.AnnotationRemovalReason],
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, etcdv1alpha2.ConditionHealthy); c != nil {
		c := *c
		seen.healthy = &c
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.members[m.Name] = append(h.members[m.Name], seen)
}

func (h *history) addPVC(pvc *corev1.PersistentVolumeClaim, gone bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pvcs[pvc.Name] = append(h.pvcs[pvc.Name], pvcSeen{at: time.Now(), uid: string(pvc.UID), gone: gone, deleting: pvc.DeletionTimestamp != nil})
}

// historyLag bounds how long the watches may trail a state the test already read with a GET.
const historyLag = 10 * time.Second

// requireMember waits until the history holds a version of member for which pred is true, and
// fails the test (with the member's timeline) otherwise.
func (h *history) requireMember(f *framework.Test, member, what string, pred func(memberSeen) bool) {
	f.T.Helper()
	err := f.Poll(fmt.Sprintf("EtcdMember %s seen %s", member, what), historyLag, func(context.Context) (bool, string, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return slices.ContainsFunc(h.members[member], pred), "", nil
	})
	if err != nil {
		f.T.Errorf("%v\ntimeline of %s:\n%s", err, member, h.memberTimeline(member))
	}
}

// requireHealthy asserts that the member's Healthy condition was seen with status and reason.
func (h *history) requireHealthy(f *framework.Test, member string, status metav1.ConditionStatus, reason string) {
	f.T.Helper()
	h.requireMember(f, member, fmt.Sprintf("Healthy=%s/%s", status, reason), func(s memberSeen) bool {
		return s.healthy != nil && s.healthy.Status == status && s.healthy.Reason == reason
	})
}

// requireRemovalReason asserts that the operator annotated the member with removal-reason
// reason: the replacement was the operator's, for that cause.
func (h *history) requireRemovalReason(f *framework.Test, member, reason string) {
	f.T.Helper()
	h.requireMember(f, member, "with removal-reason "+reason, func(s memberSeen) bool { return s.removalReason == reason })
}

// requireCluster waits until the history holds an EtcdCluster status for which pred is true.
func (h *history) requireCluster(f *framework.Test, what string, pred func(clusterSeen) bool) {
	f.T.Helper()
	err := f.Poll("EtcdCluster "+h.name+" seen with "+what, historyLag, func(context.Context) (bool, string, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return slices.ContainsFunc(h.clusters, pred), "", nil
	})
	if err != nil {
		f.T.Errorf("%v\nstatus timeline:\n%s", err, h.clusterTimeline())
	}
}

// logStatusHealed logs how long after start the EtcdCluster's status first said converged at 3
// again (readyMembers 3, Available=True/QuorumHealthy, Progressing=False) after having said
// otherwise: the operator's own view of the heal, next to the recorded one, which a test-side
// poll observes (on a loaded machine up to a few seconds later).
func (h *history) logStatusHealed(f *framework.Test, what string, start time.Time) {
	f.T.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	unconverged := false
	for _, s := range h.clusters {
		if s.at.Before(start) {
			continue
		}
		ok := s.readyMembers == 3 && condIs(s.conditions, etcdv1alpha2.ConditionAvailable, metav1.ConditionTrue, "QuorumHealthy") &&
			condIs(s.conditions, etcdv1alpha2.ConditionProgressing, metav1.ConditionFalse, "")
		if !ok {
			unconverged = true
		} else if unconverged {
			f.T.Logf("%s: status said converged at 3 again %s after the fault", what, s.at.Sub(start).Round(time.Millisecond))
			return
		}
	}
}

// destructive lists every destructive change the history holds: an EtcdMember deleted, being
// deleted or annotated with removal-reason; a data PVC deleted or being deleted.
func (h *history) destructive() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, name := range sortedKeys(h.members) {
		if i := slices.IndexFunc(h.members[name], func(s memberSeen) bool { return s.gone || s.deleting || s.removalReason != "" }); i >= 0 {
			s := h.members[name][i]
			out = append(out, fmt.Sprintf("%s EtcdMember %s: deleted %t, being deleted %t, removal-reason %q", s.at.Format(timeFormat), name, s.gone, s.deleting, s.removalReason))
		}
	}
	for _, name := range sortedKeys(h.pvcs) {
		if i := slices.IndexFunc(h.pvcs[name], func(s pvcSeen) bool { return s.gone || s.deleting }); i >= 0 {
			s := h.pvcs[name][i]
			out = append(out, fmt.Sprintf("%s PVC %s: deleted %t, being deleted %t", s.at.Format(timeFormat), name, s.gone, s.deleting))
		}
	}
	return out
}

// timeFormat stamps timelines in test logs.
const timeFormat = "15:04:05.000"

// memberTimeline describes each change of the member's Healthy condition, deletion and
// removal-reason, one line each (the caller holds h.mu).
func (h *history) memberTimeline(member string) string {
	var b strings.Builder
	last := ""
	for _, s := range h.members[member] {
		line := "no Healthy condition"
		if s.healthy != nil {
			line = fmt.Sprintf("Healthy=%s/%s %q", s.healthy.Status, s.healthy.Reason, s.healthy.Message)
		}
		if s.removalReason != "" {
			line += " removal-reason=" + s.removalReason
		}
		if s.deleting {
			line += " (being deleted)"
		}
		if s.gone {
			line = "deleted"
		}
		if line != last {
			fmt.Fprintf(&b, "  %s %s\n", s.at.Format(timeFormat), line)
			last = line
		}
	}
	return b.String()
}

// clusterTimeline describes each change of the cluster's readyMembers and conditions (the
// caller holds h.mu).
func (h *history) clusterTimeline() string {
	var b strings.Builder
	last := ""
	for _, s := range h.clusters {
		line := fmt.Sprintf("readyMembers %d %s", s.readyMembers, condLine(s.conditions))
		if line != last {
			fmt.Fprintf(&b, "  %s %s\n", s.at.Format(timeFormat), line)
			last = line
		}
	}
	return b.String()
}

func condLine(conds []metav1.Condition) string {
	parts := make([]string, 0, len(conds))
	for _, c := range conds {
		parts = append(parts, fmt.Sprintf("%s=%s/%s %q", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, "; ")
}

// log writes the cluster's status timeline and the timelines of the given members to the test
// log, and the watch errors if any: the record of what status showed during the fault.
func (h *history) log(f *framework.Test, members ...string) {
	f.T.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	f.T.Logf("EtcdCluster %s status while the fault ran:\n%s", h.name, h.clusterTimeline())
	for _, m := range members {
		f.T.Logf("EtcdMember %s:\n%s", m, h.memberTimeline(m))
	}
	if len(h.errs) > 0 {
		f.T.Logf("watch errors (the history may have gaps): %v", h.errs)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// condIs reports whether conds hold typ with status and, unless reason is empty, reason.
func condIs(conds []metav1.Condition, typ string, status metav1.ConditionStatus, reason string) bool {
	c := meta.FindStatusCondition(conds, typ)
	return c != nil && c.Status == status && (reason == "" || c.Reason == reason)
}

// errState is the state a poll reports for a failed read: the error, unless the poll's own
// deadline caused it, in which case the state seen before (more telling) is kept.
func errState(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return ""
	}
	return err.Error()
}
