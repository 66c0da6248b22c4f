package etcdcluster

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/defrag"
	"github.com/etcd-operator/etcd-operator/internal/etcdaccess"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// observation is everything one pass read, once, before anything was decided. Nothing in it is
// modified after observe returns: executors patch deep copies of its objects.
type observation struct {
	// cluster is the EtcdCluster as read.
	cluster *etcdv1alpha2.EtcdCluster
	// members are the EtcdMembers the cluster controls, sorted by name.
	members []etcdv1alpha2.EtcdMember
	// pods are the cluster's Pods by name; pvcs its data PVCs.
	pods map[string]*corev1.Pod
	pvcs []corev1.PersistentVolumeClaim
	// classes are the StorageClasses, read only while some PVC is smaller than the latched
	// size; nil otherwise.
	classes *storageClasses
	// tls is the TLS material spec.tls asks for that is missing or invalid; certs the rest of
	// what was read of the certificates.
	tls   membership.TLS
	certs certificates
	// certManager are the cert-manager Certificates spec.tls asks for that do not exist,
	// rendered for ensureCertManagerCertificates (observe_certmanager.go).
	certManager []*unstructured.Unstructured
	// caBundles are the digests of the ca.crt of the TLS Secrets read this pass, by Secret name
	// (desired.CADigest): they enter members' template hashes.
	caBundles map[string]string
	// access is what dialling etcd found wrong with the Secrets and credentials it needs.
	access accessProblem
	// etcd is what etcd answered; etcdClient is the pooled client it answered through, nil
	// when no client could be had.
	etcd       membership.Etcd
	etcdClient etcdAPI
	// stranded is what the running members said of themselves when the linearizable member
	// list failed (quorum-loss recovery).
	stranded membership.Stranded
	// defrags names the cluster's Running EtcdDefrags (docs/defrag.md).
	defrags []string
	// lastSnapshot is status.lastSnapshot as the cluster's EtcdSnapshots update it.
	lastSnapshot *etcdv1alpha2.LastSnapshot
	// lastSnapshotSize is the artifact size of lastSnapshot; nil when its EtcdSnapshot is gone.
	lastSnapshotSize *int64
	// rolling is the memory of a roll this process started that has not converged.
	rolling bool
	// now is the pass's clock reading.
	now time.Time
	// config is what the Reconciler was built with that the projection needs.
	config projection
}

// projection is the Reconciler's configuration the scope is projected with: the images that
// enter template hashes, the orphan grace and the settle times.
type projection struct {
	imageRepository, guardImage string
	orphanGrace                 time.Duration
	settles                     settles
}

// key is the cluster's pool, memory and metrics key.
func (o *observation) key() types.NamespacedName {
	return types.NamespacedName{Namespace: o.cluster.Namespace, Name: o.cluster.Name}
}

// clientTLS reports whether the cluster's client API uses TLS.
func (o *observation) clientTLS() bool { return etcdaccess.ClientTLS(o.cluster) }

// member returns the observed EtcdMember named name.
func (o *observation) member(name string) (*etcdv1alpha2.EtcdMember, error) {
	for i := range o.members {
		if o.members[i].Name == name {
			return &o.members[i], nil
		}
	}
	return nil, fmt.Errorf("EtcdMember %s is not in this pass's observation", name)
}

// pvc returns the observed PVC named name.
func (o *observation) pvc(name string) (*corev1.PersistentVolumeClaim, error) {
	for i := range o.pvcs {
		if o.pvcs[i].Name == name {
			return &o.pvcs[i], nil
		}
	}
	return nil, fmt.Errorf("PVC %s is not in this pass's observation", name)
}

// observe reads everything the pass decides over (docs/design/reconcile-pass.md, observe).
// Kubernetes objects come from the cache; etcd's silence is an observation, not an error.
func (r *Reconciler) observe(ctx context.Context, c *etcdv1alpha2.EtcdCluster) (*observation, error) {
	o := &observation{cluster: c, now: r.clock.Now(),
		config: projection{imageRepository: r.imageRepository, guardImage: r.guardImage, orphanGrace: r.orphanGrace, settles: r.settles}}
	sel := client.MatchingLabels{etcdv1alpha2.LabelCluster: c.Name}
	var members etcdv1alpha2.EtcdMemberList
	if err := r.client.List(ctx, &members, client.InNamespace(c.Namespace), sel); err != nil {
		return nil, fmt.Errorf("listing EtcdMembers: %w", err)
	}
	o.members = ownedMembers(c, members.Items)
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(c.Namespace), sel); err != nil {
		return nil, fmt.Errorf("listing Pods: %w", err)
	}
	o.pods = map[string]*corev1.Pod{}
	for i := range pods.Items {
		o.pods[pods.Items[i].Name] = &pods.Items[i]
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := r.client.List(ctx, &pvcs, client.InNamespace(c.Namespace), sel); err != nil {
		return nil, fmt.Errorf("listing PersistentVolumeClaims: %w", err)
	}
	o.pvcs = pvcs.Items
	var err error
	if o.classes, err = r.observeStorageClasses(ctx, o); err != nil {
		return nil, err
	}
	if err = r.observeTLS(ctx, o); err != nil {
		return nil, err
	}
	if o.certManager, err = r.observeCertManager(ctx, c, o.tls); err != nil {
		return nil, err
	}
	if err := r.observeCredentials(ctx, o); err != nil {
		return nil, err
	}
	var runs etcdv1alpha2.EtcdDefragList
	if err := r.client.List(ctx, &runs, client.InNamespace(c.Namespace)); err != nil {
		return nil, fmt.Errorf("listing EtcdDefrags: %w", err)
	}
	o.defrags = defrag.RunningOn(c.Name, runs.Items)
	var snapshots etcdv1alpha2.EtcdSnapshotList
	if err := r.client.List(ctx, &snapshots, client.InNamespace(c.Namespace)); err != nil {
		return nil, fmt.Errorf("listing EtcdSnapshots: %w", err)
	}
	o.lastSnapshot = backup.LastSnapshot(c.Status.LastSnapshot, c.Name, snapshots.Items)
	o.lastSnapshotSize = backup.ArtifactSize(o.lastSnapshot, c.Name, snapshots.Items)
	r.observeEtcd(ctx, o)
	r.observeHashes(ctx, o)
	o.rolling = r.memory.rolling(o.key())
	return o, nil
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
	slices.SortFunc(out, func(a, b etcdv1alpha2.EtcdMember) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// planPass is the pure decision of the pass over its observation.
func planPass(o *observation) membership.Plan {
	st := o.cluster.Status
	return membership.PlanPass(membership.PassInput{
		Spec: &o.cluster.Spec, Generation: o.cluster.Generation, Status: &st,
		Scope:    o.scopeFor(st.Observed),
		ScopeFor: o.scopeFor,
	})
}
