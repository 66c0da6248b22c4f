package etcdcluster_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
)

// realEtcd runs a real etcd process for every Pod the EtcdMember controller creates in one
// namespace, with the Pod's own flags and a data directory per PVC that outlives Pods (a
// persistent volume). It is the fake kubelet of worlds made by newRealWorld.
//
// The operator's peer URLs name hosts (<member>.<service>.<namespace>.svc) nothing here
// resolves, so each such host gets a loopback address of its own, 127.a.b.c, standing in for
// DNS: the Pod's flags are rewritten to it (listeners, advertised URLs, --initial-cluster), it
// is the Pod's IP the operator dials on port 2379, and the etcd clients of the pool map peer
// URLs between the two — etcd stores loopback addresses, the operator sees the names it built.
type realEtcd struct {
	t    *testing.T
	ns   string
	dir  string
	base string // "127.a.b."

	mu     sync.Mutex
	closed bool
	hosts  map[string]string // host → IP
	procs  map[types.UID]*etcdproc.Member
	// cluster names the EtcdCluster of each process's Pod.
	cluster map[types.UID]string
	calls   []string // membership changes sent through the pool
	// authProbes counts the AuthStatus calls sent through the pool.
	authProbes int
	// failIf, when set, names Pods whose etcd does not start (an image that crashes on a bad
	// option, say): the Pod runs but never turns Ready.
	failIf func(*corev1.Pod) bool
	// onData says, by Pod name, whether its last process started on a data directory that
	// already held a member (a restart from a persistent volume).
	onData map[string]bool
	// etcdutl is the etcdutl a restore init container runs (restoreInit); restoreAfter holds
	// back a failed restore's next attempt, as the kubelet's back-off does.
	etcdutl      string
	restoreAfter map[types.UID]time.Time
}

// newRealWorld is a world whose Pods run real etcd processes (realEtcd), with the real
// EtcdMember controller making them.
func newRealWorld(t *testing.T) *world {
	t.Helper()
	etcdproc.RequireBinary(t)
	w := newWorld(t)
	r := &realEtcd{t: t, ns: w.ns, dir: t.TempDir(), base: loopbackNet(t), hosts: map[string]string{}, procs: map[types.UID]*etcdproc.Member{},
		cluster: map[types.UID]string{}, onData: map[string]bool{}, restoreAfter: map[types.UID]time.Time{}}
	w.kubeletOnly, w.real = true, r
	w.pool = etcdclient.NewPool(etcdclient.WithDialer(r.dial))
	t.Cleanup(r.close)
	return w
}

// loopbackNet picks a random 127.a.b.0/24, so that concurrent tests (and test binaries) bind
// etcd's fixed ports on addresses of their own.
func loopbackNet(t *testing.T) string {
	t.Helper()
	n, err := rand.Int(rand.Reader, big.NewInt(150*256))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.%d.%d.", 100+n.Int64()/256, n.Int64()%256)
}

// ipFor returns host's loopback address, allocating the next one on first use.
func (r *realEtcd) ipFor(host string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ip, ok := r.hosts[host]
	if !ok {
		ip = r.base + strconv.Itoa(len(r.hosts)+1)
		r.hosts[host] = ip
	}
	return ip
}

// hostOf returns the host whose address ip is, or "" for none.
func (r *realEtcd) hostOf(ip string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for h, a := range r.hosts {
		if a == ip {
			return h
		}
	}
	return ""
}

// clientURL is the client URL of member name of cluster.
func (r *realEtcd) clientURL(cluster, name string) string {
	return "http://" + r.ipFor(desired.MemberHost(name, cluster, r.ns)) + ":2379"
}

var svcHost = regexp.MustCompile(`[a-z0-9][-a-z0-9]*\.[a-z0-9][-a-z0-9]*\.[a-z0-9][-a-z0-9]*\.svc\b`)

// localise rewrites a Pod's etcd flags for a process on this machine: every service host to
// its loopback address, the wildcard listeners to the member's own address, the data volume to
// dataDir.
func (r *realEtcd) localise(args []string, ip, dataDir string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		if rest, ok := strings.CutPrefix(a, "--data-dir="); ok {
			a = "--data-dir=" + dataDir + strings.TrimPrefix(rest, desired.DataMountPath)
		}
		a = strings.ReplaceAll(a, "0.0.0.0", ip)
		out = append(out, svcHost.ReplaceAllStringFunc(a, r.ipFor))
	}
	return out
}

// toIP and toHost map a peer URL between the operator's host and etcd's loopback address.
func (r *realEtcd) toIP(u string) string {
	p, err := url.Parse(u)
	if err != nil || !strings.HasSuffix(p.Hostname(), ".svc") {
		return u
	}
	p.Host = r.ipFor(p.Hostname()) + ":" + p.Port()
	return p.String()
}

func (r *realEtcd) toHost(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	if h := r.hostOf(p.Hostname()); h != "" {
		p.Host = h + ":" + p.Port()
	}
	return p.String()
}

func (r *realEtcd) hostsOf(ms []etcdclient.Member) []etcdclient.Member {
	out := slices.Clone(ms)
	for i := range out {
		out[i].PeerURLs = slices.Clone(out[i].PeerURLs)
		for j, u := range out[i].PeerURLs {
			out[i].PeerURLs[j] = r.toHost(u)
		}
	}
	return out
}

func (r *realEtcd) record(call string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
}

// mutations returns the membership changes sent so far (whether etcd accepted them or not).
func (r *realEtcd) mutations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// dial is the pool's Dialer: a real client whose membership calls map peer URLs.
func (r *realEtcd) dial(ctx context.Context, cfg etcdclient.Config) (etcdclient.DialedClient, error) {
	c, err := etcdclient.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &mappedClient{DialedClient: c, r: r}, nil
}

type mappedClient struct {
	etcdclient.DialedClient
	r *realEtcd
}

func (c *mappedClient) MemberList(ctx context.Context) ([]etcdclient.Member, error) {
	l, err := c.DialedClient.MemberList(ctx)
	return c.r.hostsOf(l), err
}

func (c *mappedClient) MemberAddAsLearner(ctx context.Context, peerURLs []string) (etcdclient.Member, []etcdclient.Member, error) {
	c.r.record("MemberAddAsLearner(" + strings.Join(peerURLs, ",") + ")")
	urls := make([]string, 0, len(peerURLs))
	for _, u := range peerURLs {
		urls = append(urls, c.r.toIP(u))
	}
	m, l, err := c.DialedClient.MemberAddAsLearner(ctx, urls)
	return c.r.hostsOf([]etcdclient.Member{m})[0], c.r.hostsOf(l), err
}

func (c *mappedClient) AuthEnabled(ctx context.Context) (bool, error) {
	c.r.mu.Lock()
	c.r.authProbes++
	c.r.mu.Unlock()
	return c.DialedClient.AuthEnabled(ctx)
}

// probes returns the number of AuthStatus calls sent so far.
func (r *realEtcd) probes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.authProbes
}

func (c *mappedClient) MemberPromote(ctx context.Context, id uint64) ([]etcdclient.Member, error) {
	c.r.record("MemberPromote(" + etcdclient.FormatID(id) + ")")
	l, err := c.DialedClient.MemberPromote(ctx, id)
	return c.r.hostsOf(l), err
}

func (c *mappedClient) MemberRemove(ctx context.Context, id uint64) ([]etcdclient.Member, error) {
	c.r.record("MemberRemove(" + etcdclient.FormatID(id) + ")")
	l, err := c.DialedClient.MemberRemove(ctx, id)
	return c.r.hostsOf(l), err
}

// tickCluster plays the kubelet and the garbage collector for cluster c: a Pod whose member is
// gone (by UID) or that is being deleted loses its process and is removed; a new Pod gets its
// IP, its process and Running/Ready; a process that exited is restarted, as restartPolicy
// Always does.
func (r *realEtcd) tickCluster(ctx context.Context, w *world, c *etcdv1alpha2.EtcdCluster) error {
	members, err := w.members(ctx, c.Name)
	if err != nil {
		return err
	}
	live := map[types.UID]bool{}
	for i := range members {
		live[members[i].UID] = true
	}
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(r.ns), client.MatchingLabels{etcdv1alpha2.LabelCluster: c.Name}); err != nil {
		return err
	}
	// A Pod deleted outright (envtest deletes an unscheduled Pod at once, with no grace)
	// takes its process with it, as its kubelet would.
	exists := map[types.UID]bool{}
	for i := range pods.Items {
		exists[pods.Items[i].UID] = true
	}
	r.killVanished(c.Name, exists)
	var errs []error
	for i := range pods.Items {
		pod := &pods.Items[i]
		ref := metav1.GetControllerOf(pod)
		switch {
		case ref == nil || !live[ref.UID] || !pod.DeletionTimestamp.IsZero():
			r.kill(pod.UID)
			errs = append(errs, client.IgnoreNotFound(k8s.Delete(ctx, pod, client.GracePeriodSeconds(0))))
		case pod.Status.PodIP == "":
			errs = append(errs, r.run(ctx, pod))
		default:
			errs = append(errs, r.restartExited(pod.UID))
		}
	}
	return errors.Join(errs...)
}

// run starts the etcd process of a new Pod and reports the Pod Running and Ready.
func (r *realEtcd) run(ctx context.Context, pod *corev1.Pod) error {
	args := containerArgs(pod)
	advertised := advertisedHost(args)
	if advertised == "" {
		return fmt.Errorf("Pod %s advertises no peer URL: %v", pod.Name, args)
	}
	volume, err := r.volumeOf(ctx, pod)
	if err != nil {
		return err
	}
	ip := r.ipFor(advertised)
	if done, err := r.restoreInit(ctx, pod, filepath.Join(r.dir, volume)); !done || err != nil {
		return err
	}
	r.mu.Lock()
	fail := r.failIf != nil && r.failIf(pod)
	r.mu.Unlock()
	now := metav1.Now()
	if fail {
		pod.Status = podRunning(ip, now, false)
		return k8s.Status().Update(ctx, pod)
	}
	args = r.localise(args, ip, filepath.Join(r.dir, volume))
	var dataDir string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--data-dir="); ok {
			dataDir = v
		}
	}
	_, statErr := os.Stat(filepath.Join(dataDir, "member"))
	proc, err := etcdproc.NewProcess(pod.Name, dataDir, "http://"+ip+":2379", "http://"+ip+":2381",
		filepath.Join(r.dir, "logs", pod.Name+"-"+string(pod.UID)+".log"), args)
	if err != nil {
		return err
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.procs[pod.UID] = proc
	r.cluster[pod.UID] = pod.Labels[etcdv1alpha2.LabelCluster]
	r.onData[pod.Name] = statErr == nil
	r.mu.Unlock()
	if err := proc.Start(); err != nil {
		return err
	}
	pod.Status = podRunning(ip, metav1.Now(), true)
	if err := k8s.Status().Update(ctx, pod); err != nil {
		return fmt.Errorf("starting Pod %s: %w", pod.Name, err)
	}
	return nil
}

// containerArgs are the etcd container's arguments.
func containerArgs(pod *corev1.Pod) []string {
	for _, ctr := range pod.Spec.Containers {
		if ctr.Name == desired.ContainerName {
			return ctr.Args
		}
	}
	return nil
}

// advertisedHost is the host of --initial-advertise-peer-urls, or "".
func advertisedHost(args []string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--initial-advertise-peer-urls="); ok {
			if u, err := url.Parse(v); err == nil {
				return u.Hostname()
			}
		}
	}
	return ""
}

// volumeOf names the data directory of the Pod's data volume: its PVC's, which outlives Pods,
// or the Pod's own.
func (r *realEtcd) volumeOf(ctx context.Context, pod *corev1.Pod) (string, error) {
	for _, v := range pod.Spec.Volumes {
		if v.Name != desired.DataVolumeName || v.PersistentVolumeClaim == nil {
			continue
		}
		pvc := &corev1.PersistentVolumeClaim{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: v.PersistentVolumeClaim.ClaimName}, pvc); err != nil {
			return "", fmt.Errorf("Pod %s: reading its PVC: %w", pod.Name, err)
		}
		return "pvc-" + string(pvc.UID), nil
	}
	return "pod-" + string(pod.UID), nil
}

// podRunning is the status of a Pod running at ip since now whose etcd container is Ready, or
// runs without ever turning Ready.
func podRunning(ip string, now metav1.Time, ready bool) corev1.PodStatus {
	cond := corev1.ConditionFalse
	if ready {
		cond = corev1.ConditionTrue
	}
	return corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &now,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: cond, LastTransitionTime: now}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: desired.ContainerName, Ready: ready,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
	}
}

// startedOnData reports whether the last process of Pod name started on a data directory that
// already held a member.
func (r *realEtcd) startedOnData(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.onData[name]
}

// restartExited restarts the process of Pod uid if it exited.
func (r *realEtcd) restartExited(uid types.UID) error {
	r.mu.Lock()
	p, closed := r.procs[uid], r.closed
	r.mu.Unlock()
	if p == nil || closed || p.Running() {
		return nil
	}
	r.t.Logf("etcd %s exited; restarting it. Log tail:\n%s", p.Name, p.LogTail(5))
	return p.Start()
}

// killVanished ends the processes of cluster's Pods that no longer exist.
func (r *realEtcd) killVanished(cluster string, exists map[types.UID]bool) {
	r.mu.Lock()
	var gone []types.UID
	for uid := range r.procs {
		if !exists[uid] && r.cluster[uid] == cluster {
			gone = append(gone, uid)
		}
	}
	r.mu.Unlock()
	for _, uid := range gone {
		r.kill(uid)
	}
}

// kill ends the process of Pod uid, as a Pod deleted with no grace period.
func (r *realEtcd) kill(uid types.UID) {
	r.mu.Lock()
	p := r.procs[uid]
	delete(r.procs, uid)
	r.mu.Unlock()
	if p != nil {
		_ = p.Kill() // ErrNotRunning: it had exited already
	}
}

func (r *realEtcd) close() {
	r.mu.Lock()
	r.closed = true
	procs := r.procs
	r.procs = map[types.UID]*etcdproc.Member{}
	r.mu.Unlock()
	for _, p := range procs {
		_ = p.Kill()
	}
}

// client dials every member address allocated so far.
func (r *realEtcd) client(t *testing.T) *clientv3.Client {
	t.Helper()
	r.mu.Lock()
	var eps []string
	for _, ip := range r.hosts {
		eps = append(eps, "http://"+ip+":2379")
	}
	r.mu.Unlock()
	return r.clientOf(t, eps...)
}

// clientOf dials the given endpoints only.
func (r *realEtcd) clientOf(t *testing.T, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// snapshot is etcd's member list as the operator sees it (peer URLs as hosts); empty when no
// quorum answers.
func (r *realEtcd) snapshot() []etcdclient.Member {
	r.mu.Lock()
	var eps []string
	for _, ip := range r.hosts {
		eps = append(eps, "http://"+ip+":2379")
	}
	r.mu.Unlock()
	if len(eps) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := etcdclient.New(ctx, etcdclient.Config{Endpoints: eps})
	if err != nil {
		return nil
	}
	defer func() { _ = c.Close() }()
	l, err := c.MemberList(ctx)
	if err != nil {
		return nil
	}
	return r.hostsOf(l)
}
