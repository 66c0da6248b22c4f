package translate

import (
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

// Result is the translation of one legacy cluster.
type Result struct {
	// Cluster is the EtcdCluster to create: spec, the adoption annotations and the status to
	// prefill. Nil only when the input had no legacy cluster.
	Cluster *etcdv1alpha2.EtcdCluster `json:"cluster,omitempty"`
	// Members are the members to adopt, one per Pod, sorted by name.
	Members []Member `json:"members"`
	// Secrets are the Secrets etcd-migrate generates before creating the cluster.
	Secrets []GeneratedSecret `json:"secrets,omitempty"`
	// HeadlessService is the legacy headless Service adopted members keep their DNS under.
	HeadlessService string `json:"headlessService"`
	// ClientService is the legacy client Service.
	ClientService string `json:"clientService"`
	// DataDirSubPath is the data directory below the volume root (data-dir-subpath).
	DataDirSubPath string `json:"dataDirSubPath"`
	// CADigests are the digests of the ca.crt the members' TLS Secrets hold (generated or
	// reused), as the template hash takes them.
	CADigests desired.CADigests `json:"-"`
	// Security summarises what the adoption means for transport security and auth.
	Security Security `json:"security"`
	// Warnings and Refusals, sorted by code and field. Any refusal leaves the cluster alone.
	Warnings []Finding `json:"warnings"`
	Refusals []Finding `json:"refusals"`
}

// Member is one etcd member to adopt under its Pod's name.
type Member struct {
	Name    string `json:"name"`
	ID      string `json:"memberID"`
	PodUID  string `json:"podUID"`
	PVCName string `json:"pvcName"`
	PeerURL string `json:"peerURL"`
}

// Security is the security summary of one adoption.
type Security struct {
	// ClientTLS is "none", "tls" or "mtls"; PeerTLS is "none", "auto" or "mtls".
	ClientTLS string `json:"clientTLS"`
	PeerTLS   string `json:"peerTLS"`
	// PeerAutoTLS: members keep encrypted but unauthenticated peer traffic.
	PeerAutoTLS bool `json:"peerAutoTLS"`
	// CAMerges describe each trust set widened by merging CAs into one ca.crt.
	CAMerges []string `json:"caMerges,omitempty"`
	// AuthWindow: auth is turned off before the backup and on again by the operator after
	// the adoption; in between any client can act as root.
	AuthWindow bool `json:"authWindow"`
}

// Refused reports whether the cluster must be left alone.
func (r *Result) Refused() bool { return len(r.Refusals) > 0 }

// Values of the adoption annotations.
const (
	// AdoptionInProgressValue marks objects etcd-migrate still owns.
	AdoptionInProgressValue = "true"
)

// MigratedFrom is the migrated-from annotation value: the legacy API's group and version.
var MigratedFrom = legacy.GroupVersion.String()

// translator carries one translation: the input, the result being built, the findings.
type translator struct {
	in  Input
	out *Result
	findings
	spec *etcdv1alpha2.EtcdClusterSpec
	// flags are the live etcd container's flags (legacy.ParseFlags); empty without a
	// StatefulSet.
	flags map[string]string
	// emptyDir: the members have no PVCs (refused; their checks are skipped).
	emptyDir bool
	// size is the storage size chosen; it feeds the quota checks.
	size resource.Quantity
}

// Translate maps in onto this project's API. It never fails: what cannot be translated
// becomes a refusal, so that one cluster's problem never stops the others' plans.
func Translate(in Input) *Result {
	t := &translator{in: in, out: &Result{Members: []Member{}}, spec: &etcdv1alpha2.EtcdClusterSpec{}}
	if in.Cluster == nil {
		t.refuse(RefusalInspectionFailed, "EtcdCluster", "no legacy EtcdCluster was given", "")
		return t.finish()
	}
	t.out.HeadlessService = legacy.HeadlessServiceName(in.Cluster)
	t.out.ClientService = legacy.ClientServiceName(in.Cluster)
	t.checkName()
	t.readStatefulSet()
	t.translateVersion()
	t.translateStorage()
	t.translateOptions()
	t.translatePodTemplate()
	t.translateTLS()
	t.translateAuth()
	t.translateServices()
	t.checkInspection()
	t.translateMembers()
	t.out.Cluster = t.cluster()
	return t.finish()
}

func (t *translator) finish() *Result {
	t.out.Warnings = sorted(t.warnings)
	t.out.Refusals = sorted(t.refusals)
	return t.out
}

// clusterName is what CEL accepts as an EtcdCluster name (docs/api.md).
var clusterName = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

const maxClusterName = 56

func (t *translator) checkName() {
	name := t.in.Cluster.Name
	if len(name) > maxClusterName || !clusterName.MatchString(name) {
		t.refuse(RefusalNameInvalid, "metadata.name",
			fmt.Sprintf("%q cannot name an EtcdCluster of this operator: a DNS label of at most %d characters starting with a letter (it names the Services %s and %s-client)", name, maxClusterName, name, name),
			"no in-place adoption is possible; restore a backup into a new cluster with a shorter name")
	}
}

// cluster assembles the EtcdCluster: spec, adoption annotations, and the status prefill that
// makes bootstrap impossible (clusterID, token, the latched target).
func (t *translator) cluster() *etcdv1alpha2.EtcdCluster {
	c := t.in.Cluster
	ec := &etcdv1alpha2.EtcdCluster{
		TypeMeta: metav1.TypeMeta{APIVersion: etcdv1alpha2.GroupVersion.String(), Kind: "EtcdCluster"},
		ObjectMeta: metav1.ObjectMeta{
			Name: c.Name, Namespace: c.Namespace,
			Annotations: map[string]string{
				etcdv1alpha2.AnnotationAdoptionInProgress: AdoptionInProgressValue,
				etcdv1alpha2.AnnotationMigratedFrom:       MigratedFrom,
			},
		},
		Spec: *t.spec,
	}
	if t.out.Security.PeerAutoTLS {
		ec.Annotations[etcdv1alpha2.AnnotationPeerAutoTLS] = "true"
	}
	ec.Status = etcdv1alpha2.EtcdClusterStatus{
		ClusterToken: t.clusterToken(),
		Observed:     membership.ObservedFromSpec(&ec.Spec),
		// A created object's generation is 1; the executor writes the status right after
		// the create, before anything can change the spec.
		ObservedGeneration: 1,
	}
	if t.in.Etcd != nil && len(t.in.Etcd.ClusterIDs) == 1 {
		ec.Status.ClusterID = t.in.Etcd.ClusterIDs[0]
	}
	return ec
}

// clusterToken is kept verbatim from the state ConfigMap: members never use it again once they
// have data, but a member added later must be started with the same one.
func (t *translator) clusterToken() string {
	if cm := t.in.StateConfigMap; cm != nil && cm.Data[legacy.EnvInitialClusterToken] != "" {
		return cm.Data[legacy.EnvInitialClusterToken]
	}
	return legacy.ClusterToken(t.in.Cluster.Name, t.in.Cluster.Namespace)
}

// readStatefulSet reads the live etcd container's flags, which are what runs, whatever the
// legacy spec says now.
func (t *translator) readStatefulSet() {
	t.flags = map[string]string{}
	sts := t.in.StatefulSet
	if sts == nil {
		t.refuse(RefusalStatefulSetMissing, "StatefulSet "+legacy.StatefulSetName(t.in.Cluster.Name),
			"the legacy StatefulSet does not exist, so the members' image, flags and volume layout are unknown",
			"let the legacy operator recreate it (scale its controller up, wait, scale it down again), then re-run")
		return
	}
	if c := etcdContainer(sts.Spec.Template.Spec.Containers); c != nil {
		t.flags = legacy.ParseFlags(append(append([]string{}, c.Command...), c.Args...))
	}
}

// etcdContainer is the container named etcd, or the first one.
func etcdContainer(cs []corev1.Container) *corev1.Container {
	for i := range cs {
		if cs[i].Name == legacy.ContainerName {
			return &cs[i]
		}
	}
	if len(cs) > 0 {
		return &cs[0]
	}
	return nil
}

// memberStub is an EtcdMember as far as the operator's naming functions need one.
func (t *translator) memberStub(name string) *etcdv1alpha2.EtcdMember {
	return &etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: t.in.Cluster.Namespace,
			Annotations: map[string]string{etcdv1alpha2.AnnotationHeadlessServiceName: t.out.HeadlessService}},
		Spec: etcdv1alpha2.EtcdMemberSpec{ClusterName: t.in.Cluster.Name, TLS: t.intendedMemberTLS()},
	}
}

// intendedMemberTLS is the member TLS of the translation, or of the legacy layout where a TLS
// refusal left it out: one refusal must not cascade into peer URL refusals.
func (t *translator) intendedMemberTLS() *etcdv1alpha2.EtcdMemberTLS {
	tls := memberTLS(t.spec.TLS, t.out.Security.PeerAutoTLS)
	if peer := t.in.Cluster.TLS().PeerSecret; peer != "" && (tls == nil || tls.PeerSecretRef == nil) {
		if tls == nil {
			tls = &etcdv1alpha2.EtcdMemberTLS{}
		}
		tls.PeerSecretRef = &corev1.LocalObjectReference{Name: peer}
	}
	return tls
}

// MemberTLS is the TLS part of an adopted member's template, as the operator derives it from
// its cluster (docs/api.md, "EtcdMember spec"): the Secrets a translation yields are always
// your own (serverSecretRef, peer secretRef), plus the peer-auto-tls annotation.
func MemberTLS(c *etcdv1alpha2.EtcdCluster) *etcdv1alpha2.EtcdMemberTLS {
	return memberTLS(c.Spec.TLS, c.Annotations[etcdv1alpha2.AnnotationPeerAutoTLS] == "true")
}

func memberTLS(tls *etcdv1alpha2.EtcdClusterTLS, peerAuto bool) *etcdv1alpha2.EtcdMemberTLS {
	out := &etcdv1alpha2.EtcdMemberTLS{PeerAutoTLS: peerAuto}
	if tls != nil && tls.Client != nil && tls.Client.ServerSecretRef != nil {
		out.ClientServerSecretRef = tls.Client.ServerSecretRef.DeepCopy()
		out.ClientMTLS = tls.Client.OperatorClientSecretRef != nil
	}
	if tls != nil && tls.Peer != nil && tls.Peer.SecretRef != nil {
		out.PeerSecretRef = tls.Peer.SecretRef.DeepCopy()
	}
	if *out == (etcdv1alpha2.EtcdMemberTLS{}) {
		return nil
	}
	return out
}

// peerURL is the peer URL the operator computes for an adopted member; etcd compares peer URLs
// as strings, so the persisted one must equal it.
func (t *translator) peerURL(name string) string { return desired.PeerURL(t.memberStub(name)) }
