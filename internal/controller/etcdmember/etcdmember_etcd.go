package etcdmember

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdaccess"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// etcdConfig says how to reach the member's cluster: the client URLs of its member Pods by IP
// (no DNS lookups from the operator), with the operator's TLS identity and root credentials
// when the cluster uses them (docs/tls.md). The server name verified is this member's DNS name,
// which the servers' wildcard SAN covers.
func (r *Reconciler) etcdConfig(ctx context.Context, sc *scope) (etcdclient.Config, error) {
	parent, m := sc.parent, sc.member
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(m.Namespace),
		client.MatchingLabels{etcdv1alpha2.LabelCluster: parent.Name}); err != nil {
		return etcdclient.Config{}, fmt.Errorf("listing the cluster's Pods: %w", err)
	}
	eps := podEndpoints(pods.Items, etcdaccess.ClientTLS(parent))
	if len(eps) == 0 {
		return etcdclient.Config{Endpoints: eps}, errNoEndpoints
	}
	return etcdaccess.Config(ctx, r.apiReader, parent, eps, desired.MemberHost(m.Name, desired.MemberServiceName(m), m.Namespace))
}

// podEndpoints are the client URLs of the member Pods that have an IP, sorted. Only Pods
// controlled by an EtcdMember count: the cluster label alone could be copied onto anything.
func podEndpoints(pods []corev1.Pod, tlsOn bool) []string {
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	var eps []string
	for i := range pods {
		p := &pods[i]
		ref := metav1.GetControllerOf(p)
		if p.Status.PodIP == "" || !p.DeletionTimestamp.IsZero() || ref == nil || ref.Kind != "EtcdMember" {
			continue
		}
		eps = append(eps, scheme+"://"+net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(desired.ClientPort))))
	}
	slices.Sort(eps)
	return slices.Compact(eps)
}
