package migrate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/migrate"
	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/phase"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/test/utils/apiserver"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

const (
	clusterName  = "etcd"
	operatorName = "etcd-operator"
	operatorImg  = "ghcr.io/etcd-operator/etcd-operator:v0.0.0-test"
	// etcdImage names the version of the etcd binary the tests run (envtest's), so that the
	// translation sees the image and the members agree.
	etcdImage = "quay.io/coreos/etcd:v3.6.16"
)

// env is one legacy cluster in its own namespace, with a real etcd member behind its Pod.
type env struct {
	ns   string
	set  *legacyfixture.Set
	etcd *etcdproc.Cluster
	// members are the etcd members by legacy cluster name (etcd, and those of clusters a
	// test adds to the namespace) or, for a Pod that reaches another etcd than its cluster's
	// first member, by Pod name.
	members map[string]*etcdproc.Cluster
	// added are the legacy clusters a test added to the namespace, by name.
	added map[string]*legacyfixture.Set
}

// newEnv applies the legacy fixture (one member: real etcd processes cannot resolve the
// <pod>.<headless>.<ns>.svc peer URLs the layout needs between members, and a single member
// never dials its peers), creates its Pod and PVC as objects, marks the Pod Running, starts the
// member under the Pod's name and peer URL, and runs a stand-in garbage collector.
func newEnv(tb testing.TB) *env {
	tb.Helper()
	ctx := tb.Context()
	ns := apiserver.NewNamespace(tb, k8sClient, "migrate-")
	set, err := legacyfixture.Build(legacyfixture.Options{Name: clusterName, Namespace: ns, Replicas: 1, Image: etcdImage})
	if err != nil {
		tb.Fatal(err)
	}
	if err := set.Apply(ctx, k8sClient); err != nil {
		tb.Fatal(err)
	}
	e := &env{ns: ns, set: set, members: map[string]*etcdproc.Cluster{}, added: map[string]*legacyfixture.Set{}}
	e.createPodsAndPVCs(tb, set)
	e.createOperator(tb)
	e.etcd = e.startMember(tb, set)
	startCollector(tb, ns)
	return e
}

// startMember starts the one member of set's cluster under its Pod's name and peer URL; args
// are more etcd flags.
func (e *env) startMember(tb testing.TB, set *legacyfixture.Set, args ...string) *etcdproc.Cluster {
	tb.Helper()
	c := e.startPodEtcd(tb, set, 0, args...)
	e.members[set.Options.Name] = c
	return c
}

// startPodEtcd starts a single-member etcd named after the Pod of ordinal in set's cluster,
// with that Pod's peer URL: a cluster of its own.
func (e *env) startPodEtcd(tb testing.TB, set *legacyfixture.Set, ordinal int, args ...string) *etcdproc.Cluster {
	tb.Helper()
	pod := legacy.PodName(set.Options.Name, ordinal)
	peer := fmt.Sprintf("https://%s.%s.%s.svc:%d", pod, legacy.HeadlessServiceName(set.Cluster), e.ns, legacy.PeerPort)
	return etcdproc.StartForTest(tb.Context(), tb, etcdproc.Options{ExtraArgs: append([]string{
		"--name=" + pod, "--initial-advertise-peer-urls=" + peer, "--initial-cluster=" + pod + "=" + peer,
	}, args...)})
}

// createPodsAndPVCs stands in for the StatefulSet controller of an applied legacy cluster.
func (e *env) createPodsAndPVCs(tb testing.TB, set *legacyfixture.Set) {
	tb.Helper()
	ctx := tb.Context()
	sts := &appsv1.StatefulSet{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: set.StatefulSet.Name}, sts); err != nil {
		tb.Fatal(err)
	}
	for _, p := range set.ExpectedPods() {
		p.UID, p.ResourceVersion = "", ""
		p.OwnerReferences[0].UID = sts.UID
		status := p.Status
		status.ContainerStatuses[0].RestartCount = 2
		if err := k8sClient.Create(ctx, p); err != nil {
			tb.Fatal(err)
		}
		p.Status = status
		if err := k8sClient.Status().Update(ctx, p); err != nil {
			tb.Fatal(err)
		}
	}
	for _, c := range set.ExpectedPVCs() {
		c.UID, c.ResourceVersion = "", ""
		if err := k8sClient.Create(ctx, c); err != nil {
			tb.Fatal(err)
		}
	}
}

// createOperator is a stand-in for this project's operator Deployment: etcd-migrate reads its
// image.
func (e *env) createOperator(tb testing.TB) {
	tb.Helper()
	d := legacyfixture.ControllerDeployment(operatorImg, 1)
	d.Name, d.Namespace = operatorName, e.ns
	if err := k8sClient.Create(tb.Context(), d); err != nil {
		tb.Fatal(err)
	}
}

// options are the flags of a run in this namespace.
func (e *env) options(apply bool) *migrate.Options {
	o := migrate.NewOptions()
	o.LegacyController = e.ns + "/" + legacyfixture.ControllerName
	o.NewController = e.ns + "/" + operatorName
	o.Apply, o.Yes, o.SkipBackup = apply, apply, apply
	return o
}

// run runs etcd-migrate with the write counter in front of the API server.
func (e *env) run(tb testing.TB, o *migrate.Options, w *writes) (string, error) {
	tb.Helper()
	var out, errOut bytes.Buffer
	d := &migrate.Deps{
		Kube: w.client(), Dialer: directDialer{e.members}, Clock: clock.RealClock{}, Prompter: noTerminal{},
		Out: &out, ErrOut: &errOut, Namespace: e.ns, Poll: 100 * time.Millisecond, VerifyTimeout: 200 * time.Millisecond,
	}
	err := migrate.Run(tb.Context(), o, d)
	tb.Logf("etcd-migrate stderr:\n%s", errOut.String())
	return out.String(), err
}

// directDialer reaches each Running Pod's etcd directly instead of port-forwarding to it:
// the etcd registered under the Pod's name, else its cluster's.
type directDialer struct{ members map[string]*etcdproc.Cluster }

func (d directDialer) Dial(ctx context.Context, t phase.Target) (*phase.Session, error) {
	endpoints := map[string]string{}
	for _, p := range t.Pods {
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		c := d.members[p.Name]
		if c == nil {
			c = d.members[t.Cluster]
		}
		if c == nil {
			return nil, fmt.Errorf("no etcd runs for cluster %s", t.Cluster)
		}
		endpoints[p.Name] = c.Members[0].ClientURL
	}
	if len(endpoints) == 0 {
		return nil, errors.New("no Running Pod")
	}
	conn, err := phase.Connect(ctx, t, endpoints)
	if err != nil {
		return nil, err
	}
	return &phase.Session{Etcd: conn, Endpoints: endpoints}, nil
}

type noTerminal struct{}

func (noTerminal) Interactive() bool            { return false }
func (noTerminal) Confirm(string) (bool, error) { return false, nil }

// writes counts the writes a run makes and, with failAfter >= 0, fails every write after the
// first failAfter: a run killed between two writes.
type writes struct {
	mu        sync.Mutex
	n         int
	failAfter int
	log       []string
}

var errKilled = errors.New("injected: the process was killed here")

func newWrites(failAfter int) *writes { return &writes{failAfter: failAfter} }

func (w *writes) count(verb string, obj client.Object) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failAfter >= 0 && w.n >= w.failAfter {
		return errKilled
	}
	w.n++
	w.log = append(w.log, fmt.Sprintf("%s %T %s", verb, obj, obj.GetName()))
	return nil
}

func (w *writes) client() client.Client {
	return interceptor.NewClient(k8sClient, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := w.count("create", obj); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := w.count("update", obj); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := w.count("patch", obj); err != nil {
				return err
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := w.count("delete", obj); err != nil {
				return err
			}
			return c.Delete(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := w.count("update-"+sub, obj); err != nil {
				return err
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := w.count("patch-"+sub, obj); err != nil {
				return err
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
}

// startCollector stands in for the garbage collector's part in orphan deletion: for an object
// being deleted with the orphan finalizer, it removes the references to it from the namespace's
// objects, then the finalizer.
func startCollector(tb testing.TB, ns string) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	tb.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			collectOnce(ctx, ns)
			time.Sleep(100 * time.Millisecond)
		}
	}()
}

func collectOnce(ctx context.Context, ns string) {
	lc := &unstructured.Unstructured{}
	lc.SetGroupVersionKind(legacy.EtcdClusterGVK)
	for _, owner := range []client.Object{&appsv1.StatefulSet{}, lc} {
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: clusterName}, owner); err != nil {
			continue
		}
		if owner.GetDeletionTimestamp() == nil || !slices.Contains(owner.GetFinalizers(), metav1.FinalizerOrphanDependents) {
			continue
		}
		if orphanDependents(ctx, ns, owner.GetUID()) != nil {
			continue
		}
		owner.SetFinalizers(slices.DeleteFunc(owner.GetFinalizers(), func(f string) bool { return f == metav1.FinalizerOrphanDependents }))
		_ = k8sClient.Update(ctx, owner)
	}
}

func orphanDependents(ctx context.Context, ns string, uid types.UID) error {
	lists := []client.ObjectList{&corev1.PodList{}, &corev1.PersistentVolumeClaimList{}, &corev1.ServiceList{},
		&corev1.ConfigMapList{}, &policyv1.PodDisruptionBudgetList{}, &appsv1.StatefulSetList{}}
	for _, l := range lists {
		if err := k8sClient.List(ctx, l, client.InNamespace(ns)); err != nil {
			return err
		}
		items, err := metaItems(l)
		if err != nil {
			return err
		}
		for _, obj := range items {
			refs := obj.GetOwnerReferences()
			kept := slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool { return r.UID == uid })
			if len(kept) == len(refs) {
				continue
			}
			obj.SetOwnerReferences(kept)
			if err := k8sClient.Update(ctx, obj); err != nil {
				return err
			}
		}
	}
	return nil
}
