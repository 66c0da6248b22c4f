// Package clusterread reads what the custom resources and Kubernetes say about one EtcdCluster:
// the cluster, its EtcdMembers, their Pods, its PodDisruptionBudget and its EtcdSnapshots. It
// never dials etcd and never reads a Secret, so a read-only Role without Secret access is enough
// (docs/kubectl-etcd.md, "RBAC").
package clusterread

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
)

// State is one cluster as the API server shows it.
type State struct {
	Cluster *etcdv1alpha2.EtcdCluster
	// Members are the cluster's EtcdMembers, sorted by name.
	Members []etcdv1alpha2.EtcdMember
	// Pods maps a member's name to its Pod; a member without a Pod is absent.
	Pods map[string]*corev1.Pod
	// PDB is nil when the cluster has none (a single-voter or paused cluster).
	PDB *policyv1.PodDisruptionBudget
	// Snapshots are the cluster's EtcdSnapshots, newest first; nil when Read was not asked
	// for them.
	Snapshots []etcdv1alpha2.EtcdSnapshot
}

// Options say what Read reads beyond the cluster and its members.
type Options struct {
	Pods, PDB, Snapshots bool
}

// NotFoundError is a missing EtcdCluster; its message lists the clusters that do exist.
type NotFoundError struct {
	Namespace, Name string
	Existing        []string
}

func (e *NotFoundError) Error() string {
	if len(e.Existing) == 0 {
		return fmt.Sprintf("EtcdCluster %s/%s not found, and namespace %s has none (use -n to pick another namespace)", e.Namespace, e.Name, e.Namespace)
	}
	return fmt.Sprintf("EtcdCluster %s/%s not found; namespace %s has: %s", e.Namespace, e.Name, e.Namespace, strings.Join(e.Existing, ", "))
}

// Read reads cluster name in namespace ns.
func Read(ctx context.Context, r client.Reader, ns, name string, o Options) (*State, error) {
	c := &etcdv1alpha2.EtcdCluster{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, notFound(ctx, r, ns, name)
		}
		return nil, fmt.Errorf("reading EtcdCluster %s/%s: %w", ns, name, err)
	}
	s := &State{Cluster: c, Pods: map[string]*corev1.Pod{}}
	var err error
	if s.Members, err = members(ctx, r, c); err != nil {
		return nil, err
	}
	if o.Pods {
		if err := s.readPods(ctx, r); err != nil {
			return nil, err
		}
	}
	if o.PDB {
		if err := s.readPDB(ctx, r); err != nil {
			return nil, err
		}
	}
	if o.Snapshots {
		if s.Snapshots, err = snapshots(ctx, r, c); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func notFound(ctx context.Context, r client.Reader, ns, name string) error {
	e := &NotFoundError{Namespace: ns, Name: name}
	var list etcdv1alpha2.EtcdClusterList
	if r.List(ctx, &list, client.InNamespace(ns)) == nil {
		for _, c := range list.Items {
			e.Existing = append(e.Existing, c.Name)
		}
		slices.Sort(e.Existing)
	}
	return e
}

func members(ctx context.Context, r client.Reader, c *etcdv1alpha2.EtcdCluster) ([]etcdv1alpha2.EtcdMember, error) {
	var list etcdv1alpha2.EtcdMemberList
	if err := r.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingLabels{etcdv1alpha2.LabelCluster: c.Name}); err != nil {
		return nil, fmt.Errorf("listing the EtcdMembers of %s/%s: %w", c.Namespace, c.Name, err)
	}
	out := make([]etcdv1alpha2.EtcdMember, 0, len(list.Items))
	for _, m := range list.Items {
		if m.Spec.ClusterName == c.Name {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b etcdv1alpha2.EtcdMember) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (s *State) readPods(ctx context.Context, r client.Reader) error {
	c := s.Cluster
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingLabels{etcdv1alpha2.LabelCluster: c.Name}); err != nil {
		return fmt.Errorf("listing the Pods of %s/%s: %w", c.Namespace, c.Name, err)
	}
	for _, m := range s.Members {
		for i := range list.Items {
			if p := &list.Items[i]; p.Name == podName(m) {
				s.Pods[m.Name] = p
			}
		}
	}
	return nil
}

// podName is the name of m's Pod: the member's name unless its status says otherwise.
func podName(m etcdv1alpha2.EtcdMember) string {
	if m.Status.PodName != "" {
		return m.Status.PodName
	}
	return m.Name
}

func (s *State) readPDB(ctx context.Context, r client.Reader) error {
	c := s.Cluster
	pdb := &policyv1.PodDisruptionBudget{}
	err := r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: desired.PDBName(c.Name)}, pdb)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading the PodDisruptionBudget of %s/%s: %w", c.Namespace, c.Name, err)
	}
	s.PDB = pdb
	return nil
}

func snapshots(ctx context.Context, r client.Reader, c *etcdv1alpha2.EtcdCluster) ([]etcdv1alpha2.EtcdSnapshot, error) {
	var list etcdv1alpha2.EtcdSnapshotList
	if err := r.List(ctx, &list, client.InNamespace(c.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the EtcdSnapshots of %s/%s: %w", c.Namespace, c.Name, err)
	}
	var out []etcdv1alpha2.EtcdSnapshot
	for _, s := range list.Items {
		if s.Spec.ClusterRef.Name == c.Name {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b etcdv1alpha2.EtcdSnapshot) int {
		if d := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// MemberPods are the member Pods in member-name order: all of them, Ready or not, since a member
// that does not answer is reported rather than hidden.
func (s *State) MemberPods() []corev1.Pod {
	var out []corev1.Pod
	for _, m := range s.Members {
		if p, ok := s.Pods[m.Name]; ok {
			out = append(out, *p)
		}
	}
	return out
}

// DefaultReplicas is spec.replicas when unset (the CRD's default).
const DefaultReplicas = 3

// Replicas is c's spec.replicas, defaulted.
func Replicas(c *etcdv1alpha2.EtcdCluster) int32 {
	if c.Spec.Replicas == nil {
		return DefaultReplicas
	}
	return *c.Spec.Replicas
}

// Condition is c's condition of type t; ok is false when c has none.
func Condition(c *etcdv1alpha2.EtcdCluster, t string) (metav1.Condition, bool) {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return cond, true
		}
	}
	return metav1.Condition{}, false
}
