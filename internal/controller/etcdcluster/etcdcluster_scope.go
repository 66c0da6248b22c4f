package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// pass is one reconcile of one cluster: the objects read, the etcd view, and the status being
// built. It is created per Reconcile call and never shared.
type pass struct {
	r        *Reconciler
	cluster  *etcdv1alpha2.EtcdCluster
	original *etcdv1alpha2.EtcdCluster
	now      time.Time

	// Filled by buildScope.
	scoped  bool
	members []etcdv1alpha2.EtcdMember
	pods    map[string]*corev1.Pod
	pvcs    []corev1.PersistentVolumeClaim
	etcd    etcdclient.Client
	view    membership.Etcd
	tls     membership.TLS
	// classes are the StorageClasses, read only while some PVC is smaller than the latched
	// size; nil otherwise.
	classes *storageClasses
	// Filled by latch and planAndAct.
	lock   membership.Lock
	action membership.Action
}

// key is the cluster's pool and metrics key.
func (p *pass) key() string {
	return types.NamespacedName{Namespace: p.cluster.Namespace, Name: p.cluster.Name}.String()
}

// clusterTLS reports whether the cluster's client and peer APIs use TLS.
func (p *pass) clientTLS() bool {
	return p.cluster.Spec.TLS != nil && p.cluster.Spec.TLS.Client != nil
}

// buildScope reads everything the pass decides over, once (behaviour.md §2 step 3).
func (p *pass) buildScope(ctx context.Context) (ctrl.Result, error) {
	c := p.cluster
	sel := client.MatchingLabels{etcdv1alpha2.LabelCluster: c.Name}
	var members etcdv1alpha2.EtcdMemberList
	if err := p.r.client.List(ctx, &members, client.InNamespace(c.Namespace), sel); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing EtcdMembers: %w", err)
	}
	p.members = ownedMembers(c, members.Items)
	var pods corev1.PodList
	if err := p.r.client.List(ctx, &pods, client.InNamespace(c.Namespace), sel); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing Pods: %w", err)
	}
	p.pods = map[string]*corev1.Pod{}
	for i := range pods.Items {
		p.pods[pods.Items[i].Name] = &pods.Items[i]
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := p.r.client.List(ctx, &pvcs, client.InNamespace(c.Namespace), sel); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing PersistentVolumeClaims: %w", err)
	}
	p.pvcs = pvcs.Items
	if err := p.observeStorageClasses(ctx); err != nil {
		return ctrl.Result{}, err
	}
	if err := p.observeTLS(ctx); err != nil {
		return ctrl.Result{}, err
	}
	p.scoped = true
	p.observeEtcd(ctx)
	return ctrl.Result{}, nil
}

// ownedMembers keeps the members this cluster controls (by UID), sorted by name. A member that
// carries the cluster label but another controller is never adopted.
func ownedMembers(c *etcdv1alpha2.EtcdCluster, items []etcdv1alpha2.EtcdMember) []etcdv1alpha2.EtcdMember {
	var out []etcdv1alpha2.EtcdMember
	for _, m := range items {
		if ref := metav1.GetControllerOf(&m); ref != nil && ref.UID == c.UID {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b etcdv1alpha2.EtcdMember) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// endpoints are the client URLs of members whose Pod runs with an IP, by member name: Pod IPs,
// never DNS (the operator may run outside the cluster's DNS, and tests run it on the host). A
// member being removed stays in: until etcd no longer lists it, it votes, and the quorum gate
// must see its health (listed drops it from Status once it is gone).
func (p *pass) endpoints() map[string]string {
	out := map[string]string{}
	for i := range p.members {
		m := &p.members[i]
		if m.Spec.Dormant {
			continue
		}
		if pod := p.pods[m.Name]; podRunning(pod) && pod.Status.PodIP != "" {
			out[m.Name] = membership.ClientURL(pod.Status.PodIP, p.clientTLS())
		}
	}
	return out
}

// observeEtcd fills the etcd view. Failures leave it unknown: a silent etcd is an observation,
// not an error of the pass.
func (p *pass) observeEtcd(ctx context.Context) {
	log := logf.FromContext(ctx)
	byMember := p.endpoints()
	if len(byMember) == 0 {
		return
	}
	eps := slices.Sorted(maps.Values(byMember))
	if p.clientTLS() {
		// TLS material (behaviour.md §15) is wired in a later milestone; never dial a TLS
		// cluster in plaintext.
		log.V(1).Info("Not dialling a TLS cluster: TLS clients are not supported yet")
		return
	}
	cli, err := p.r.pool.Get(ctx, p.key(), etcdclient.Config{Endpoints: eps})
	if err != nil {
		log.V(1).Info("Cannot reach etcd", "reason", err.Error())
		return
	}
	p.etcd = cli
	start := time.Now()
	list, err := cli.MemberList(ctx)
	if err != nil {
		log.V(1).Info("MemberList failed", "reason", err.Error(), "took", time.Since(start))
		return
	}
	listTook := time.Since(start)
	p.view = membership.Etcd{Known: true, Members: list, Statuses: p.statuses(ctx, cli, listed(byMember, list))}
	statusTook := time.Since(start) - listTook
	defer func() {
		// Slow observations make every step slow; debug logs say which call it was.
		log.V(1).Info("Observed etcd", "memberList", listTook, "status", statusTook, "total", time.Since(start), "answered", len(p.view.Statuses))
	}()
	for _, st := range p.view.Statuses {
		if st.Leader != 0 {
			p.view.Leader = st.Leader
			break
		}
	}
	if alarms, err := cli.AlarmList(ctx); err == nil {
		p.view.Alarms = alarms
	}
	key := types.NamespacedName{Namespace: p.cluster.Namespace, Name: p.cluster.Name}
	p.view.FirstSeen = p.r.observeFirstSeen(key, list, p.now)
	p.view.StartedSeen = p.r.observeStarted(key, list, p.now)
}

// listed keeps the endpoints of members etcd's member list shows started, sorted: a member
// etcd does not list was removed, and one that has not started cannot answer yet.
func listed(byMember map[string]string, list []etcdclient.Member) []string {
	var out []string
	for name, ep := range byMember {
		if slices.ContainsFunc(list, func(e etcdclient.Member) bool {
			return e.Started() && (e.Name == name || slices.ContainsFunc(e.PeerURLs, func(u string) bool { return membership.NameFromPeerURL(u) == name }))
		}) {
			out = append(out, ep)
		}
	}
	slices.Sort(out)
	return out
}

// statuses asks every endpoint for its Status in parallel (each call has its own timeout in the
// adapter) and indexes the answers by member ID.
func (p *pass) statuses(ctx context.Context, cli etcdclient.Client, eps []string) map[uint64]etcdclient.Status {
	out := map[uint64]etcdclient.Status{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, ep := range eps {
		wg.Go(func() {
			st, err := cli.Status(ctx, ep)
			if err != nil || st.ID == 0 {
				return
			}
			mu.Lock()
			out[st.ID] = st
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// observeFirstSeen records when each member ID was first seen and drops IDs that left.
func (r *Reconciler) observeFirstSeen(key types.NamespacedName, list []etcdclient.Member, now time.Time) map[uint64]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := r.firstSeen[key]
	next := make(map[uint64]time.Time, len(list))
	for _, m := range list {
		if t, ok := prev[m.ID]; ok {
			next[m.ID] = t
		} else {
			next[m.ID] = now
		}
	}
	r.firstSeen[key] = next
	out := make(map[uint64]time.Time, len(next))
	for k, v := range next {
		out[k] = v
	}
	return out
}

// observeStarted records when each member was first seen started (named in the member list).
// Members already started the first time this operator process looks at the cluster get the
// zero time: they were up before the operator was, so most likely for longer than any grace.
func (r *Reconciler) observeStarted(key types.NamespacedName, list []etcdclient.Member, now time.Time) map[uint64]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev, known := r.startedSeen[key]
	next := make(map[uint64]time.Time, len(list))
	for _, m := range list {
		switch t, ok := prev[m.ID]; {
		case ok:
			next[m.ID] = t
		case !m.Started():
		case known:
			next[m.ID] = now
		default:
			next[m.ID] = time.Time{}
		}
	}
	r.startedSeen[key] = next
	return maps.Clone(next)
}

// peerURL is the peer URL member m advertises, as its flags render it.
func (p *pass) peerURL(m *etcdv1alpha2.EtcdMember) string { return desired.PeerURL(m) }

// scope projects the pass's objects for the planner.
func (p *pass) scope() membership.Scope {
	s := membership.Scope{
		ClusterID:         p.cluster.Status.ClusterID,
		Etcd:              p.view,
		Now:               p.now,
		OrphanMemberGrace: p.r.orphanGrace,
		Bootstrapping:     bootstrapping(p.cluster),
		Rolling:           p.rolling(),
		TLS:               p.tls,
	}
	if b := p.cluster.Status.ReplacementBackoff; b != nil {
		s.Backoff = membership.Backoff{Attempts: b.Attempts, NotBefore: b.NotBefore.Time}
	}
	if o := p.cluster.Status.Observed; o != nil {
		s.Target = o.Replicas
		s.Memory = o.Storage.Medium == etcdv1alpha2.StorageMediumMemory
	}
	s.StorageSize = p.latchedSize()
	for i := range p.members {
		s.Members = append(s.Members, p.memberView(&p.members[i]))
	}
	for i := range p.pvcs {
		pvc := &p.pvcs[i]
		v := membership.PVC{
			Name: pvc.Name, Member: pvc.Labels[etcdv1alpha2.LabelComponent],
			MemberUID: pvc.Annotations[etcdv1alpha2.AnnotationMemberUID], Deleting: !pvc.DeletionTimestamp.IsZero(),
		}
		p.readoptView(&v, pvc)
		v.Claim = p.claimFrom(pvc)
		s.PVCs = append(s.PVCs, v)
	}
	s.ClassifyFromEtcd()
	return s
}

func (p *pass) memberView(m *etcdv1alpha2.EtcdMember) membership.Member {
	pod := p.pods[m.Name]
	// remove-first is a flag: its presence is the request, whatever the value, so that
	// "kubectl annotate ... remove-first=" (an empty value) counts as much as "=true".
	_, removeFirst := m.Annotations[etcdv1alpha2.AnnotationRemoveFirst]
	var notReady string
	if r := meta.FindStatusCondition(m.Status.Conditions, etcdv1alpha2.ConditionReady); r != nil && r.Status == metav1.ConditionFalse {
		notReady = r.Message
	}
	replaceReason, replaceAnnotated := m.Annotations[etcdv1alpha2.AnnotationReplace]
	// An unparsable ID is treated as unknown: the member is then matched by peer URL and name.
	memberID, _ := etcdclient.ParseID(m.Status.MemberID)
	var readySince time.Time
	if r := meta.FindStatusCondition(m.Status.Conditions, etcdv1alpha2.ConditionReady); r != nil && r.Status == metav1.ConditionTrue {
		readySince = r.LastTransitionTime.Time
	}
	var podHash string
	if pod != nil {
		podHash = pod.Annotations[etcdv1alpha2.AnnotationTemplateHash]
	}
	var healthyReason, healthyMessage string
	if h := meta.FindStatusCondition(m.Status.Conditions, etcdv1alpha2.ConditionHealthy); h != nil && h.Status == metav1.ConditionFalse {
		healthyReason, healthyMessage = h.Reason, h.Message
	}
	// The member controller's Ready condition, confirmed by the Pod in the cache both controllers
	// share: the condition can only have turned True after that cache showed a Ready Pod, but it
	// lags a deleted or failed Pod by one member-controller pass, during which status would count
	// a member with no Pod as Ready (docs/e2e-lifecycle.md, finding 8).
	ready := meta.IsStatusConditionTrue(m.Status.Conditions, etcdv1alpha2.ConditionReady) && podReady(pod)
	return membership.Member{
		Name:             m.Name,
		UID:              string(m.UID),
		Created:          m.CreationTimestamp.Time,
		PeerURL:          p.peerURL(m),
		Bootstrap:        m.Spec.Bootstrap,
		Pending:          m.Spec.InitialCluster == "",
		Dormant:          m.Spec.Dormant,
		Deleting:         !m.DeletionTimestamp.IsZero(),
		RemovalReason:    m.Annotations[etcdv1alpha2.AnnotationRemovalReason],
		RemoveFirst:      removeFirst,
		AllowDeletion:    m.Annotations[etcdv1alpha2.AnnotationAllowDeletion] == "true",
		Ready:            ready,
		Unhealthy:        meta.IsStatusConditionFalse(m.Status.Conditions, etcdv1alpha2.ConditionHealthy),
		NotReadyMessage:  notReady,
		HealthyReason:    healthyReason,
		HealthyMessage:   healthyMessage,
		Updated:          meta.IsStatusConditionTrue(m.Status.Conditions, etcdv1alpha2.ConditionUpdated),
		TemplateCurrent:  membership.TemplateCurrent(&m.Spec, p.memberTarget(m)),
		WantHash:         p.wantHash(m),
		AuthorisedHash:   m.Annotations[etcdv1alpha2.AnnotationTemplateHash],
		PodHash:          podHash,
		ReadySince:       readySince,
		PodRunning:       podRunning(pod) && pod.UID != "" && (m.Status.PodUID == "" || string(pod.UID) == m.Status.PodUID),
		PodReady:         podReady(pod),
		ContainerStarted: containerStarted(pod),
		VoterHint:        m.Status.IsVoter,
		MemberID:         memberID,
		ReplaceRequested: replaceReason,
		ReplaceAnnotated: replaceAnnotated,
	}
}

// bootstrapping reports whether the cluster is still forming: it has never been Available. Only
// the wording of Progressing depends on it.
func bootstrapping(c *etcdv1alpha2.EtcdCluster) bool {
	if c.Status.ClusterID == "" {
		return true
	}
	av := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionAvailable)
	pr := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionProgressing)
	if av != nil && av.Status == metav1.ConditionTrue {
		return false
	}
	return pr == nil || pr.Reason == membership.ReasonBootstrapping || pr.Reason == membership.ReasonWaitingForSeed ||
		pr.Reason == membership.ReasonInitialSnapshot || pr.Reason == membership.ReasonPromotingLearner
}

// containerStarted is when the etcd container's current run started; zero when it is not running.
func containerStarted(pod *corev1.Pod) time.Time {
	if pod == nil {
		return time.Time{}
	}
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == desired.ContainerName && c.State.Running != nil {
			return c.State.Running.StartedAt.Time
		}
	}
	return time.Time{}
}

func podRunning(pod *corev1.Pod) bool {
	return pod != nil && pod.DeletionTimestamp.IsZero() && pod.Status.Phase == corev1.PodRunning
}

func podReady(pod *corev1.Pod) bool {
	if !podRunning(pod) {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// defaultJitter spreads idle resyncs by ±10 % so that a fleet's clusters do not resync together.
func defaultJitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.2-0.1)*float64(d)) //nolint:gosec // G404: jitter, not security
}

// member returns the pass's EtcdMember named name.
func (p *pass) member(name string) (*etcdv1alpha2.EtcdMember, error) {
	for i := range p.members {
		if p.members[i].Name == name {
			return &p.members[i], nil
		}
	}
	return nil, errors.New("EtcdMember " + name + " is not in this pass's scope")
}
