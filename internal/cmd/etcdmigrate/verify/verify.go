// Package verify is etcd-migrate's post-adoption check, run at the end of an adoption and as the
// `etcd-migrate verify` subcommand (docs/migration.md, "Verify"): the same cluster ID and member
// IDs as inspected, equal HashKV across members, Available=True, and no Pod restarted.
package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/adopt"
	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/phase"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdaccess"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
)

// Result is one cluster's verification: Problems is empty when it passed.
type Result struct {
	Cluster  string   `json:"cluster"`
	Problems []string `json:"problems"`
}

// Passed reports whether every check passed.
func (r *Result) Passed() bool { return len(r.Problems) == 0 }

// Cluster verifies one adopted cluster. The expectations come from what the adoption recorded:
// status.clusterID, each member's status.memberID and restart baseline annotation.
func Cluster(ctx context.Context, r client.Reader, d phase.Dialer, c *etcdv1alpha2.EtcdCluster) (*Result, error) {
	res := &Result{Cluster: c.Namespace + "/" + c.Name, Problems: []string{}}
	if cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ConditionAvailable); cond == nil || cond.Status != "True" {
		res.Problems = append(res.Problems, "EtcdCluster is not Available=True (yet): the operator has not taken over or the cluster is degraded")
	}
	var members etcdv1alpha2.EtcdMemberList
	if err := r.List(ctx, &members, client.InNamespace(c.Namespace), client.MatchingLabels{etcdv1alpha2.LabelCluster: c.Name}); err != nil {
		return nil, err
	}
	var pods []corev1.Pod
	headless := desired.HeadlessServiceName(c.Name)
	for _, m := range members.Items {
		if h := m.Annotations[etcdv1alpha2.AnnotationHeadlessServiceName]; h != "" {
			headless = h
		}
		pod := &corev1.Pod{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: m.Status.PodName}, pod); err != nil {
			res.Problems = append(res.Problems, fmt.Sprintf("Pod %s of member %s: %v", m.Status.PodName, m.Name, err))
			continue
		}
		pods = append(pods, *pod)
		res.Problems = append(res.Problems, RestartProblems(&m, pod)...)
	}
	facts, err := readFacts(ctx, r, d, c, pods, headless)
	if err != nil {
		res.Problems = append(res.Problems, "etcd: "+err.Error())
		return res, nil
	}
	res.Problems = append(res.Problems, IdentityProblems(c, members.Items, facts)...)
	return res, nil
}

// RestartProblems compares a member's Pod with the baseline recorded at adoption.
func RestartProblems(m *etcdv1alpha2.EtcdMember, pod *corev1.Pod) []string {
	base, ok := m.Annotations[adopt.AnnotationRestartBaseline]
	if !ok {
		return nil
	}
	uid, count, _ := strings.Cut(base, "/")
	if string(pod.UID) != uid {
		return []string{fmt.Sprintf("Pod %s was replaced since the adoption (UID %s, was %s)", pod.Name, pod.UID, uid)}
	}
	var now int32
	for _, s := range pod.Status.ContainerStatuses {
		now += s.RestartCount
	}
	if strconv.Itoa(int(now)) != count {
		return []string{fmt.Sprintf("Pod %s restarted: %d container restarts, %s at the adoption", pod.Name, now, count)}
	}
	return nil
}

// IdentityProblems compares etcd's facts with the IDs the adoption recorded, and reports
// divergence, alarms and unhealthy members.
func IdentityProblems(c *etcdv1alpha2.EtcdCluster, members []etcdv1alpha2.EtcdMember, f *translate.EtcdFacts) []string {
	var out []string
	if len(f.ClusterIDs) != 1 || f.ClusterIDs[0] != c.Status.ClusterID {
		out = append(out, fmt.Sprintf("cluster ID is %v, %s was inspected", f.ClusterIDs, c.Status.ClusterID))
	}
	live := map[string]string{}
	for _, m := range f.Members {
		live[m.Name] = m.ID
	}
	for _, m := range members {
		if m.Annotations[adopt.AnnotationRestartBaseline] == "" {
			continue
		}
		if got := live[m.Name]; got != m.Status.MemberID {
			out = append(out, fmt.Sprintf("member %s has ID %q in etcd, %s was inspected", m.Name, got, m.Status.MemberID))
		}
	}
	if f.HashKVMismatch {
		out = append(out, "HashKV differs: "+f.HashKVDetail)
	}
	if len(f.Alarms) > 0 {
		out = append(out, "alarms: "+strings.Join(f.Alarms, ", "))
	}
	if len(f.Unhealthy) > 0 {
		out = append(out, "unhealthy: "+strings.Join(f.Unhealthy, ", "))
	}
	slices.Sort(out)
	return out
}

// readFacts dials the adopted cluster as the operator does (its client identity and root's
// password once auth is on).
// The server name is a member's name under its headless Service, which adopted members'
// certificates name (legacy certificates name the legacy headless Service).
func readFacts(ctx context.Context, r client.Reader, d phase.Dialer, c *etcdv1alpha2.EtcdCluster, pods []corev1.Pod, headless string) (*translate.EtcdFacts, error) {
	if len(pods) == 0 {
		return nil, errors.New("no member Pod exists")
	}
	cfg, err := etcdaccess.Config(ctx, r, c, []string{"unused"}, desired.MemberHost(pods[0].Name, headless, c.Namespace))
	if err != nil {
		return nil, err
	}
	t := phase.Target{Namespace: c.Namespace, Cluster: c.Name, Pods: pods, Scheme: "http",
		TLS: cfg.TLS, TLSDigest: cfg.TLSDigest, Username: cfg.Username, Password: cfg.Password}
	if etcdaccess.ClientTLS(c) {
		t.Scheme = "https"
	}
	s, err := d.Dial(ctx, t)
	if err != nil {
		return nil, err
	}
	defer func() { _ = s.Close() }()
	return phase.ReadFacts(ctx, s)
}
