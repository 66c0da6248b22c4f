package etcddefrag

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/defrag"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdaccess"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/podstate"
)

// observation is what one pass saw of the run's cluster.
type observation struct {
	// cluster is the EtcdCluster; nil when it does not exist.
	cluster *etcdv1alpha2.EtcdCluster
	// endpoints are the client URLs of the members whose Pod runs, by member name.
	endpoints map[string]string
	// known is true when etcd answered MemberList; view and ids are empty otherwise, and
	// unknown says why.
	known   bool
	unknown string
	view    defrag.View
	// ids are etcd member IDs by member name.
	ids map[string]uint64
	// quota is the backend quota the members run with.
	quota int64
	// cli is the pooled client the answers came through; nil when none could be had.
	cli etcdAPI
}

// observe reads the cluster and, when it exists, its members, Pods and etcd. A failed
// Kubernetes read is the pass's error; a silent etcd is an observation.
func (r *Reconciler) observe(ctx context.Context, run *etcdv1alpha2.EtcdDefrag, now time.Time) (*observation, error) {
	o := &observation{view: defrag.View{Now: now}, endpoints: map[string]string{}, ids: map[string]uint64{}}
	c := &etcdv1alpha2.EtcdCluster{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: run.Spec.ClusterRef.Name}, c); err != nil {
		if apierrors.IsNotFound(err) {
			return o, nil
		}
		return nil, fmt.Errorf("reading EtcdCluster %s: %w", run.Spec.ClusterRef.Name, err)
	}
	o.cluster = c
	quota, set := desired.EffectiveQuotaBackendBytes(c.Spec.Options, desired.StorageSize(c.Spec.Storage))
	if !set {
		quota = etcdDefaultQuota
	}
	o.quota = quota
	pods, err := r.memberPods(ctx, c)
	if err != nil {
		return nil, err
	}
	r.observeEtcd(ctx, o, pods)
	return o, nil
}

// etcdDefaultQuota is etcd's own --quota-backend-bytes default
// (https://etcd.io/docs/v3.6/dev-guide/limit/#storage-size-limit).
const etcdDefaultQuota int64 = 2 << 30

// memberPods returns the Pods of the cluster's running members, by member name.
func (r *Reconciler) memberPods(ctx context.Context, c *etcdv1alpha2.EtcdCluster) (map[string]*corev1.Pod, error) {
	var members etcdv1alpha2.EtcdMemberList
	if err := r.client.List(ctx, &members, client.InNamespace(c.Namespace), client.MatchingLabels{etcdv1alpha2.LabelCluster: c.Name}); err != nil {
		return nil, fmt.Errorf("listing the EtcdMembers of %s: %w", c.Name, err)
	}
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(c.Namespace), client.MatchingLabels{etcdv1alpha2.LabelCluster: c.Name}); err != nil {
		return nil, fmt.Errorf("listing the Pods of %s: %w", c.Name, err)
	}
	byName := map[string]*corev1.Pod{}
	for i := range pods.Items {
		byName[pods.Items[i].Name] = &pods.Items[i]
	}
	out := map[string]*corev1.Pod{}
	for _, m := range members.Items {
		if m.Spec.Dormant || !m.DeletionTimestamp.IsZero() {
			continue
		}
		if pod := byName[m.Name]; podstate.Running(pod) && pod.Status.PodIP != "" {
			out[m.Name] = pod
		}
	}
	return out, nil
}

// observeEtcd fills the etcd part of o from the member Pods' endpoints.
func (r *Reconciler) observeEtcd(ctx context.Context, o *observation, pods map[string]*corev1.Pod) {
	log := logf.FromContext(ctx)
	tls := etcdaccess.ClientTLS(o.cluster)
	first := ""
	for name, pod := range pods {
		o.endpoints[name] = membership.ClientURL(pod.Status.PodIP, tls)
		if first == "" || name < first {
			first = name
		}
	}
	if len(o.endpoints) == 0 {
		o.unknown = "no member Pod of the cluster runs"
		return
	}
	// The same identity, credentials and verified name as the EtcdCluster controller
	// (docs/tls.md): a member's DNS name, which the wildcard SAN covers.
	cfg, err := etcdaccess.Config(ctx, r.apiReader, o.cluster, slices.Sorted(maps.Values(o.endpoints)),
		desired.MemberHost(first, desired.HeadlessServiceName(o.cluster.Name), o.cluster.Namespace))
	if err != nil {
		o.unknown = "cannot build the etcd client configuration: " + err.Error()
		return
	}
	cli, err := r.etcd.Get(ctx, o.cluster.Namespace+"/"+o.cluster.Name, cfg)
	if err != nil {
		o.unknown = "cannot reach etcd: " + err.Error()
		return
	}
	o.cli = cli
	list, err := cli.MemberList(ctx)
	if err != nil {
		o.unknown = "etcd does not answer MemberList: " + err.Error()
		log.V(1).Info("MemberList failed", "reason", err.Error())
		return
	}
	alarms, err := cli.AlarmList(ctx)
	if err != nil {
		o.unknown = "etcd does not answer AlarmList: " + err.Error()
		return
	}
	o.known = true
	statuses := statusOf(ctx, cli, o.endpoints)
	for _, e := range list {
		name := e.Name
		if name == "" || o.endpoints[name] == "" {
			continue
		}
		o.ids[name] = e.ID
		st, answered := statuses[name]
		m := defrag.Member{Name: name, ID: e.ID, Learner: e.IsLearner, Answered: answered && st.ID == e.ID,
			PodReady: podstate.ReadyCondition(pods[name]), CorruptAlarm: hasAlarm(alarms, e.ID, etcdclient.AlarmCorrupt)}
		m.Sizes = defrag.Sizes{DBSize: st.DBSize, DBSizeInUse: st.DBSizeInUse, Quota: o.quota}
		o.view.Members = append(o.view.Members, m)
		if st.Leader != 0 {
			o.view.Leader = st.Leader
		}
	}
	o.view.NoSpace = slices.ContainsFunc(alarms, func(a etcdclient.Alarm) bool { return a.Type == etcdclient.AlarmNoSpace })
}

// statusOf asks every endpoint for its Status in parallel, by member name.
func statusOf(ctx context.Context, cli etcdAPI, endpoints map[string]string) map[string]etcdclient.Status {
	out := map[string]etcdclient.Status{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, ep := range endpoints {
		wg.Go(func() {
			st, err := cli.Status(ctx, ep)
			if err != nil {
				return
			}
			mu.Lock()
			out[name] = st
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func hasAlarm(alarms []etcdclient.Alarm, id uint64, t etcdclient.AlarmType) bool {
	return slices.ContainsFunc(alarms, func(a etcdclient.Alarm) bool { return a.MemberID == id && a.Type == t })
}
