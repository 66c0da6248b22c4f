package plan

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
)

// Members renders the EtcdMembers of step 2, one per adopted Pod and named exactly like it,
// with the template the operator derives from the prefilled status.observed and the template
// hash it would compute for that template: recorded on the member (authorised) and on the Pod
// (built with), so the operator counts every adopted member as updated and restarts none.
// Their ownerReference to the EtcdCluster is set by the executor, which knows its UID.
func Members(tr *translate.Result, cfg Config) []etcdv1alpha2.EtcdMember {
	c := tr.Cluster
	initial := InitialCluster(tr.Members)
	out := make([]etcdv1alpha2.EtcdMember, 0, len(tr.Members))
	for _, m := range tr.Members {
		em := etcdv1alpha2.EtcdMember{
			TypeMeta: metav1.TypeMeta{APIVersion: etcdv1alpha2.GroupVersion.String(), Kind: "EtcdMember"},
			ObjectMeta: metav1.ObjectMeta{
				Name: m.Name, Namespace: c.Namespace,
				Labels: desired.MemberLabels(c.Name, m.Name),
				Annotations: map[string]string{
					etcdv1alpha2.AnnotationHeadlessServiceName: tr.HeadlessService,
					etcdv1alpha2.AnnotationDataDirSubPath:      tr.DataDirSubPath,
					etcdv1alpha2.AnnotationAdoptionInProgress:  translate.AdoptionInProgressValue,
				},
			},
			Spec: etcdv1alpha2.EtcdMemberSpec{
				ClusterName:    c.Name,
				ClusterToken:   c.Status.ClusterToken,
				InitialCluster: initial,
				TLS:            translate.MemberTLS(c),
			},
			Status: etcdv1alpha2.EtcdMemberStatus{
				MemberID: m.ID, PodName: m.Name, PodUID: m.PodUID, PVCName: m.PVCName, IsVoter: true,
			},
		}
		membership.ApplyTemplate(&em.Spec, c.Status.Observed)
		em.Annotations[etcdv1alpha2.AnnotationTemplateHash] = TemplateHash(&em.Spec, tr.CADigests, cfg)
		out = append(out, em)
	}
	return out
}

// TemplateHash is the template hash of an adopted member as the operator computes it
// (internal/desired.TemplateHash over the operator's images and the CA digests of the Secrets
// the member mounts).
func TemplateHash(spec *etcdv1alpha2.EtcdMemberSpec, ca desired.CADigests, cfg Config) string {
	return desired.TemplateHash(spec, desired.MemberImages(cfg.ImageRepository, spec.Version, cfg.GuardImage), ca)
}

// InitialCluster is --initial-cluster from etcd's persisted peer URLs, sorted by name. etcd
// ignores it once a member has data, but a member's spec requires one, and these are the values
// etcd already holds.
func InitialCluster(members []translate.Member) string {
	parts := make([]string, 0, len(members))
	for _, m := range members {
		parts = append(parts, m.Name+"="+m.PeerURL)
	}
	return strings.Join(parts, ",")
}

// nativeServices are the operator's own Services of the adopted cluster; step 7 creates the
// headless one under the cluster's name.
func nativeServices(c *etcdv1alpha2.EtcdCluster) (headless, client *corev1.Service) {
	return desired.Services(c)
}
