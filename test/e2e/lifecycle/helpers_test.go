//go:build e2e

package lifecycle

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdconn"
)

// Timeouts of the waits below. They bound how long a stuck operator can hold a test; they are
// not performance assertions (docs/design/timings.md, "Targets": measured and published only).
const (
	// bootstrapTimeout bounds create → Available for up to five members.
	bootstrapTimeout = 6 * time.Minute
	// scaleTimeout bounds one scale step (add → promote, or one removal) to convergence.
	scaleTimeout = 4 * time.Minute
	// goneTimeout bounds garbage collection after a delete.
	goneTimeout = 3 * time.Minute
	// etcdCallTimeout bounds each MemberList the test makes.
	etcdCallTimeout = 3 * time.Second
	// observeInterval is how often the membership observer lists members.
	observeInterval = time.Second
)

// envEtcdVersion overrides the etcd version of the clusters the scenarios create.
const envEtcdVersion = "E2E_ETCD_VERSION"

// defaultEtcdVersion is the version of config/samples/etcdcluster.yaml, whose image the local
// cluster imports.
const defaultEtcdVersion = "3.6.16"

func etcdVersion() string {
	if v := os.Getenv(envEtcdVersion); v != "" {
		return v
	}
	return defaultEtcdVersion
}

var (
	crClientOnce sync.Once
	crClient     client.Client
	errCRClient  error
)

// kc returns the controller-runtime client with the project's types, built once per run.
func kc(f *framework.Test) client.Client {
	f.T.Helper()
	crClientOnce.Do(func() { crClient, errCRClient = f.NewClient(etcdv1alpha2.AddToScheme) })
	if errCRClient != nil {
		f.T.Fatal(errCRClient)
	}
	return crClient
}

// requireOperator skips the test when the operator is not deployed.
func requireOperator(f *framework.Test) {
	f.T.Helper()
	if _, err := f.OperatorDeployment(f.Ctx); errors.Is(err, framework.ErrNoOperator) {
		f.T.Skip("the operator is not deployed (make deploy)")
	} else if err != nil {
		f.T.Fatal(err)
	}
}

// newCluster returns an EtcdCluster named name in the test namespace with replicas members and
// a 1Gi PVC each; mutate adjusts it before creation.
func newCluster(f *framework.Test, name string, replicas int32) *etcdv1alpha2.EtcdCluster {
	return &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace},
		Spec: etcdv1alpha2.EtcdClusterSpec{
			Replicas: ptr.To(replicas),
			Version:  etcdVersion(),
			Storage:  etcdv1alpha2.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))},
		},
	}
}

func createCluster(f *framework.Test, ec *etcdv1alpha2.EtcdCluster) {
	f.T.Helper()
	if err := kc(f).Create(f.Ctx, ec); err != nil {
		f.T.Fatalf("creating EtcdCluster %s: %v", ec.Name, err)
	}
}

func getCluster(ctx context.Context, f *framework.Test, name string) (*etcdv1alpha2.EtcdCluster, error) {
	ec := &etcdv1alpha2.EtcdCluster{}
	err := kc(f).Get(ctx, types.NamespacedName{Namespace: f.Namespace, Name: name}, ec)
	return ec, err
}

// setReplicas changes spec.replicas with a merge patch, as `kubectl patch` would.
func setReplicas(f *framework.Test, name string, replicas int32) {
	f.T.Helper()
	ec := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace}}
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)))
	if err := kc(f).Patch(f.Ctx, ec, patch); err != nil {
		f.T.Fatalf("setting replicas of %s to %d: %v", name, replicas, err)
	}
}

func listMembers(ctx context.Context, f *framework.Test, name string) ([]etcdv1alpha2.EtcdMember, error) {
	var list etcdv1alpha2.EtcdMemberList
	if err := kc(f).List(ctx, &list, client.InNamespace(f.Namespace)); err != nil {
		return nil, err
	}
	var out []etcdv1alpha2.EtcdMember
	for _, m := range list.Items {
		if m.Spec.ClusterName == name {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func condSummary(conds []metav1.Condition) string {
	parts := make([]string, 0, len(conds))
	for _, c := range conds {
		parts = append(parts, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	return strings.Join(parts, " ")
}

func clusterState(ec *etcdv1alpha2.EtcdCluster) string {
	return fmt.Sprintf("gen %d observed %d, readyMembers %d, clusterID %q, %s",
		ec.Generation, ec.Status.ObservedGeneration, ec.Status.ReadyMembers, ec.Status.ClusterID, condSummary(ec.Status.Conditions))
}

// podSelector selects a cluster's member Pods; voterSelector only its voters.
func podSelector(name string) string { return etcdv1alpha2.LabelCluster + "=" + name }

func voterSelector(name string) string {
	return podSelector(name) + "," + etcdv1alpha2.LabelRole + "=" + etcdv1alpha2.RoleVoter
}

// waitConverged waits until the cluster reports n Ready members, Available=True/QuorumHealthy,
// Progressing=False/Reconciled for its current generation, n EtcdMembers and n Ready voter
// Pods, and etcd lists n started voters and no learner.
func waitConverged(f *framework.Test, name string, n int, timeout time.Duration) *etcdv1alpha2.EtcdCluster {
	f.T.Helper()
	return waitConvergedOr(f, name, n, timeout, nil)
}

// waitConvergedOr is waitConverged that gives up early when abort returns an error.
func waitConvergedOr(f *framework.Test, name string, n int, timeout time.Duration, abort func(context.Context) error) *etcdv1alpha2.EtcdCluster {
	f.T.Helper()
	var ec *etcdv1alpha2.EtcdCluster
	err := f.Poll(fmt.Sprintf("EtcdCluster %s converged at %d members", name, n), timeout, func(ctx context.Context) (bool, string, error) {
		if abort != nil {
			if err := abort(ctx); err != nil {
				state := "not read"
				if ec != nil {
					state = clusterState(ec)
				}
				return false, state, err
			}
		}
		got, err := getCluster(ctx, f, name)
		if err != nil {
			return false, err.Error(), nil
		}
		ec = got
		done, state := convergedState(ctx, f, ec, n)
		return done, state, nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	return ec
}

// convergedState reports whether ec (just read) and its members are converged at n, and what
// was seen otherwise.
func convergedState(ctx context.Context, f *framework.Test, ec *etcdv1alpha2.EtcdCluster, n int) (bool, string) {
	name := ec.Name
	state := clusterState(ec)
	avail := meta.FindStatusCondition(ec.Status.Conditions, etcdv1alpha2.ConditionAvailable)
	prog := meta.FindStatusCondition(ec.Status.Conditions, etcdv1alpha2.ConditionProgressing)
	if ec.Status.ObservedGeneration != ec.Generation || int(ec.Status.ReadyMembers) != n ||
		avail == nil || avail.Status != metav1.ConditionTrue || avail.Reason != "QuorumHealthy" ||
		prog == nil || prog.Status != metav1.ConditionFalse || ec.Status.ClusterID == "" {
		return false, state
	}
	members, err := listMembers(ctx, f, name)
	if err != nil || len(members) != n {
		return false, fmt.Sprintf("%s; %d EtcdMembers (%v)", state, len(members), err)
	}
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: voterSelector(name)})
	if err != nil {
		return false, err.Error()
	}
	ready := 0
	for i := range pods.Items {
		if framework.PodReady(&pods.Items[i]) && pods.Items[i].DeletionTimestamp == nil {
			ready++
		}
	}
	if ready != n || len(pods.Items) != n {
		return false, fmt.Sprintf("%s; %d/%d voter Pods Ready", state, ready, len(pods.Items))
	}
	ml, err := memberList(ctx, f, name)
	if err != nil {
		return false, fmt.Sprintf("%s; MemberList: %v", state, err)
	}
	voters, learners, unstarted := countMembers(ml)
	return voters == n && learners == 0 && unstarted == 0,
		fmt.Sprintf("%s; etcd: %d voters, %d learners, %d unstarted", state, voters, learners, unstarted)
}

// waitCondition waits until the cluster's condition typ has status and reason.
func waitCondition(f *framework.Test, name, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) *etcdv1alpha2.EtcdCluster {
	f.T.Helper()
	var ec *etcdv1alpha2.EtcdCluster
	err := f.Poll(fmt.Sprintf("EtcdCluster %s %s=%s/%s", name, typ, status, reason), timeout, func(ctx context.Context) (bool, string, error) {
		var err error
		ec, err = getCluster(ctx, f, name)
		if err != nil {
			return false, err.Error(), nil
		}
		c := meta.FindStatusCondition(ec.Status.Conditions, typ)
		return c != nil && c.Status == status && c.Reason == reason && ec.Status.ObservedGeneration == ec.Generation, clusterState(ec), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	return ec
}

// memberList asks the cluster's members for etcd's member list, dialling each member Pod by IP
// in turn (a learner refuses MemberList, a starting member does not answer) until one answers.
func memberList(ctx context.Context, f *framework.Test, name string) (*clientv3.MemberListResponse, error) {
	ml, _, err := memberListAndPods(ctx, f, name)
	return ml, err
}

// memberListAndPods is memberList that also returns the member Pods it dialled.
func memberListAndPods(ctx context.Context, f *framework.Test, name string) (*clientv3.MemberListResponse, []corev1.Pod, error) {
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
	if err != nil {
		return nil, nil, err
	}
	// Voters first: they answer.
	sort.SliceStable(pods.Items, func(i, j int) bool {
		return pods.Items[i].Labels[etcdv1alpha2.LabelRole] > pods.Items[j].Labels[etcdv1alpha2.LabelRole]
	})
	access := accessOf(f, name)
	eps, _ := etcdconn.PodEndpoints(pods.Items, etcdconn.ClientPort, access != nil)
	var errs []error
	for _, ep := range eps {
		resp, err := memberListWith(ctx, ep, access)
		if err == nil {
			return resp, pods.Items, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", ep, err))
	}
	if len(eps) == 0 {
		return nil, pods.Items, fmt.Errorf("no member Pod of %s has an IP", name)
	}
	return nil, pods.Items, errors.Join(errs...)
}

func memberListAt(ctx context.Context, ep string) (*clientv3.MemberListResponse, error) {
	return memberListWith(ctx, ep, nil)
}

// memberListWith is memberListAt over TLS with t (nil: plaintext).
func memberListWith(ctx context.Context, ep string, t *tls.Config) (*clientv3.MemberListResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, etcdCallTimeout)
	defer cancel()
	c, err := etcdconn.New(ctx, etcdconn.Options{Endpoints: []string{ep}, DialTimeout: etcdCallTimeout, TLS: t})
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	return c.MemberList(ctx, clientv3.WithSerializable())
}

func countMembers(ml *clientv3.MemberListResponse) (voters, learners, unstarted int) {
	for _, m := range ml.Members {
		switch {
		case m.Name == "":
			unstarted++
			if m.IsLearner {
				learners++
			}
		case m.IsLearner:
			learners++
		default:
			voters++
		}
	}
	return voters, learners, unstarted
}

// peerName is the member name in a peer URL http://<member>.<svc>.<ns>.svc:2380.
func peerName(peerURL string) string {
	u, err := url.Parse(peerURL)
	if err != nil {
		return peerURL
	}
	host, _, _ := strings.Cut(u.Hostname(), ".")
	return host
}

func hexID(id uint64) string { return strconv.FormatUint(id, 16) }

// membershipObserver lists the cluster's etcd members every second while a flow runs and
// remembers the most learners seen at once, any duplicated member (two members with the same
// peer URL or name), and any learner whose Pod carries the voter role label (the client Service
// and the PDB select on it, so a learner must never have it).
type membershipObserver struct {
	mu          sync.Mutex
	maxLearners int
	clusterIDs  map[string]bool
	duplicates  []string
	learnerPods []string
	samples     int
	stop        func()
}

func observeMembership(f *framework.Test, name string) *membershipObserver {
	o := &membershipObserver{clusterIDs: map[string]bool{}}
	o.stop = sampleEvery(f, observeInterval, func(ctx context.Context) {
		if ml, pods, err := memberListAndPods(ctx, f, name); err == nil {
			o.add(ml, pods)
		}
	})
	return o
}

// sampleEvery calls sample at once and then every interval until the returned stop is called
// (or the test ends); stop waits for the sample in flight.
func sampleEvery(f *framework.Test, interval time.Duration, sample func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(f.Ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			sample(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	f.T.Cleanup(stop)
	return stop
}

func (o *membershipObserver) add(ml *clientv3.MemberListResponse, pods []corev1.Pod) {
	o.mu.Lock()
	defer o.mu.Unlock()
	voterPods := map[string]bool{}
	for _, p := range pods {
		if p.Labels[etcdv1alpha2.LabelRole] == etcdv1alpha2.RoleVoter && p.DeletionTimestamp == nil {
			voterPods[p.Name] = true
		}
	}
	for _, m := range ml.Members {
		if n := peerName(firstOr(m.PeerURLs)); m.IsLearner && voterPods[n] && !slices.Contains(o.learnerPods, n) {
			o.learnerPods = append(o.learnerPods, n)
		}
	}
	o.samples++
	o.clusterIDs[hexID(ml.Header.ClusterId)] = true
	_, learners, _ := countMembers(ml)
	o.maxLearners = max(o.maxLearners, learners)
	seen := map[string]bool{}
	for _, m := range ml.Members {
		key := peerName(firstOr(m.PeerURLs))
		if key == "" {
			key = m.Name
		}
		if seen[key] && !slices.Contains(o.duplicates, key) {
			o.duplicates = append(o.duplicates, key)
		}
		seen[key] = true
	}
}

func firstOr(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// check stops the observer and fails the test on more than one learner at once, a duplicated
// member or a change of cluster ID.
func (o *membershipObserver) check(f *framework.Test, wantClusterID string) {
	f.T.Helper()
	o.stop()
	o.mu.Lock()
	defer o.mu.Unlock()
	f.T.Logf("membership observer: %d samples, at most %d learner(s) at once, cluster IDs %v", o.samples, o.maxLearners, o.clusterIDs)
	if o.samples == 0 {
		f.T.Error("membership observer: no MemberList answered during the flow")
	}
	if o.maxLearners > 1 {
		f.T.Errorf("observed %d learners at once, want at most 1", o.maxLearners)
	}
	if len(o.duplicates) > 0 {
		f.T.Errorf("duplicated members observed: %v", o.duplicates)
	}
	if len(o.learnerPods) > 0 {
		f.T.Errorf("learners whose Pods carried the voter role label (client Service endpoint, PDB): %v", o.learnerPods)
	}
	if wantClusterID != "" {
		for id := range o.clusterIDs {
			if id != wantClusterID {
				f.T.Errorf("observed cluster ID %s, want %s throughout", id, wantClusterID)
			}
		}
	}
}

// checkMembership asserts the steady state of a converged cluster of n members: etcd lists n
// started voters and no learner, each one an EtcdMember of the cluster with the same member ID
// (no orphan, no duplicate), the cluster ID equals status.clusterID, and every EtcdMember has a
// Ready Pod. It returns the member IDs by name.
func checkMembership(f *framework.Test, ec *etcdv1alpha2.EtcdCluster, n int) map[string]string {
	f.T.Helper()
	ml, err := memberList(f.Ctx, f, ec.Name)
	if err != nil {
		f.T.Fatalf("MemberList: %v", err)
	}
	members, err := listMembers(f.Ctx, f, ec.Name)
	if err != nil {
		f.T.Fatal(err)
	}
	if got := hexID(ml.Header.ClusterId); got != ec.Status.ClusterID {
		f.T.Errorf("etcd cluster ID %s, status.clusterID %s", got, ec.Status.ClusterID)
	}
	voters, learners, unstarted := countMembers(ml)
	if voters != n || learners != 0 || unstarted != 0 || len(ml.Members) != n {
		f.T.Errorf("etcd members: %d voters, %d learners, %d unstarted, want %d voters only", voters, learners, unstarted, n)
	}
	byName := map[string]string{}
	for _, m := range ml.Members {
		if _, dup := byName[m.Name]; dup {
			f.T.Errorf("etcd lists member %s twice", m.Name)
		}
		byName[m.Name] = hexID(m.ID)
		if pn := peerName(firstOr(m.PeerURLs)); pn != m.Name {
			f.T.Errorf("member %s advertises peer URL %v", m.Name, m.PeerURLs)
		}
	}
	if len(members) != n {
		f.T.Errorf("%d EtcdMembers, want %d", len(members), n)
	}
	for _, m := range members {
		id, ok := byName[m.Name]
		switch {
		case !ok:
			f.T.Errorf("EtcdMember %s is not in etcd's member list %v", m.Name, byName)
		case m.Status.MemberID != id:
			f.T.Errorf("EtcdMember %s status.memberID %q, etcd says %s", m.Name, m.Status.MemberID, id)
		}
		if !m.Status.IsVoter {
			f.T.Errorf("EtcdMember %s status.isVoter false", m.Name)
		}
	}
	for name := range byName {
		if !slices.ContainsFunc(members, func(m etcdv1alpha2.EtcdMember) bool { return m.Name == name }) {
			f.T.Errorf("etcd member %s has no EtcdMember (orphan)", name)
		}
	}
	return byName
}

// checkObjects asserts the always-on objects of a converged cluster of n members: the PDB
// (minAvailable n/2+1 over voters), the headless and client Services and their selectors, the
// client Service's endpoints (voters only), and Pods spread over nodes when n ≤ 3.
func checkObjects(f *framework.Test, name string, n int, nodes int) {
	f.T.Helper()
	checkPDB(f, name, n)
	checkServices(f, name)
	voters := checkSpread(f, name, n, nodes)
	checkClientEndpoints(f, name, n, voters)
}

// checkPDB waits for the PDB of a converged cluster of n members: integer minAvailable n/2+1,
// selector cluster + role=voter, n expected Pods.
func checkPDB(f *framework.Test, name string, n int) {
	f.T.Helper()
	want := n/2 + 1
	err := f.Poll(fmt.Sprintf("PDB %s minAvailable %d", name, want), time.Minute, func(ctx context.Context) (bool, string, error) {
		pdb, err := f.Kube.PolicyV1().PodDisruptionBudgets(f.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		got := "unset"
		if pdb.Spec.MinAvailable != nil {
			got = pdb.Spec.MinAvailable.String()
		}
		sel := metav1.FormatLabelSelector(pdb.Spec.Selector)
		return got == strconv.Itoa(want) && sel == voterSelector(name) && pdb.Status.ExpectedPods == int32(n),
			fmt.Sprintf("minAvailable %s, selector %s, expectedPods %d", got, sel, pdb.Status.ExpectedPods), nil
	})
	if err != nil {
		f.T.Error(err)
	}
}

// checkServices asserts the headless Service (all members, not-ready addresses published) and
// the client Service (voters only).
func checkServices(f *framework.Test, name string) {
	f.T.Helper()
	headless, err := f.Kube.CoreV1().Services(f.Namespace).Get(f.Ctx, name, metav1.GetOptions{})
	switch {
	case err != nil:
		f.T.Errorf("headless Service: %v", err)
	case headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses:
		f.T.Errorf("headless Service: clusterIP %q publishNotReadyAddresses %t", headless.Spec.ClusterIP, headless.Spec.PublishNotReadyAddresses)
	case len(headless.Spec.Selector) != 1 || headless.Spec.Selector[etcdv1alpha2.LabelCluster] != name:
		f.T.Errorf("headless Service selector %v, want only %s=%s", headless.Spec.Selector, etcdv1alpha2.LabelCluster, name)
	}
	clientSvc, err := f.Kube.CoreV1().Services(f.Namespace).Get(f.Ctx, name+"-client", metav1.GetOptions{})
	if err != nil {
		f.T.Errorf("client Service: %v", err)
	} else if s := clientSvc.Spec.Selector; len(s) != 2 || s[etcdv1alpha2.LabelCluster] != name || s[etcdv1alpha2.LabelRole] != etcdv1alpha2.RoleVoter {
		f.T.Errorf("client Service selector %v, want cluster %s and role voter", s, name)
	}
}

// checkSpread asserts one Pod per node when n ≤ nodes and returns the voter Pods' names.
func checkSpread(f *framework.Test, name string, n, nodes int) map[string]bool {
	f.T.Helper()
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: podSelector(name)})
	if err != nil {
		f.T.Fatal(err)
	}
	voters := map[string]bool{}
	nodesUsed := map[string]bool{}
	for _, p := range pods.Items {
		if p.Labels[etcdv1alpha2.LabelRole] == etcdv1alpha2.RoleVoter {
			voters[p.Name] = true
		}
		nodesUsed[p.Spec.NodeName] = true
	}
	if n <= nodes && len(nodesUsed) != n {
		f.T.Errorf("%d Pods on %d nodes %v, want one per node", len(pods.Items), len(nodesUsed), keys(nodesUsed))
	}
	return voters
}

// checkClientEndpoints waits until the client Service's EndpointSlices hold exactly the n voter
// Pods (EndpointSlices follow the Pods with a small delay).
func checkClientEndpoints(f *framework.Test, name string, n int, voters map[string]bool) {
	f.T.Helper()
	err := f.Poll("client Service endpoints = voters", time.Minute, func(ctx context.Context) (bool, string, error) {
		list, err := f.Kube.DiscoveryV1().EndpointSlices(f.Namespace).List(ctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=" + name + "-client",
		})
		if err != nil {
			return false, err.Error(), nil
		}
		var got []string
		for _, s := range list.Items {
			for _, e := range s.Endpoints {
				if e.TargetRef != nil {
					got = append(got, e.TargetRef.Name)
				}
			}
		}
		sort.Strings(got)
		ok := len(got) == len(voters) && len(got) == n
		for _, g := range got {
			ok = ok && voters[g]
		}
		return ok, fmt.Sprintf("endpoints %v, voters %v", got, keys(voters)), nil
	})
	if err != nil {
		f.T.Error(err)
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// nodeCount is the number of Ready nodes.
func nodeCount(f *framework.Test) int {
	f.T.Helper()
	nodes, err := f.Kube.CoreV1().Nodes().List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	return len(nodes.Items)
}

// deleteCluster deletes the EtcdCluster in the background, as `kubectl delete` does.
func deleteCluster(f *framework.Test, name string) {
	f.T.Helper()
	ec := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace}}
	if err := kc(f).Delete(f.Ctx, ec); err != nil && !apierrors.IsNotFound(err) {
		f.T.Fatalf("deleting EtcdCluster %s: %v", name, err)
	}
}

// dialVoters dials the cluster's voter Pods by IP; the client is closed when the test ends.
func dialVoters(f *framework.Test, name string) (*clientv3.Client, []string) {
	f.T.Helper()
	return f.DialMembers(voterSelector(name), accessOf(f, name))
}

// since is a small helper for timing a step that is not a single function call.
func since(start time.Time) time.Duration { return time.Since(start).Round(time.Millisecond) }
