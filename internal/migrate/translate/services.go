package translate

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

// serviceSpecFields have a home in spec.clientService.
var serviceSpecFields = map[string]bool{"type": true}

// translateServices maps serviceTemplate onto spec.clientService, checks that the Services
// this operator creates do not collide with the legacy ones, and warns about the headless
// Service's release labels and a stricter legacy PDB.
func (t *translator) translateServices() {
	c := t.in.Cluster
	t.checkServiceNames()
	if st := c.Spec.ServiceTemplate; st != nil {
		t.translateServiceTemplate(st)
	}
	if svc := t.in.HeadlessService; svc != nil {
		t.checkReleaseLabels(svc)
	}
	if c.Spec.PodDisruptionBudgetTemplate != nil {
		t.checkPDB(c.Spec.PodDisruptionBudgetTemplate.Spec)
	}
}

// checkServiceNames refuses legacy Services that hold the names of this operator's Services:
// the headless <c> is created at the cut-over, and <c>-client by the operator.
func (t *translator) checkServiceNames() {
	c := t.in.Cluster
	ours := map[string]string{desired.HeadlessServiceName(c.Name): "headless", desired.ClientServiceName(c.Name): "client"}
	if role, taken := ours[t.out.HeadlessService]; taken {
		t.refuse(RefusalServiceNameConflict, "spec.headlessServiceTemplate.metadata.name",
			fmt.Sprintf("the legacy headless Service is named %s, the name of this operator's %s Service; adopted members need the legacy one to stay until they are replaced", t.out.HeadlessService, role),
			"no in-place adoption is possible with this name; restore a backup into a new cluster")
	}
	if t.out.ClientService == desired.ClientServiceName(c.Name) {
		t.refuse(RefusalServiceNameConflict, "spec.serviceTemplate.metadata.name",
			fmt.Sprintf("the legacy client Service is named %s, the name of this operator's client Service", t.out.ClientService),
			"rename it in the legacy spec (the legacy operator recreates it), move its clients, then re-run")
	}
	if t.out.ClientService != c.Name && t.out.ClientService != desired.ClientServiceName(c.Name) {
		t.warn(WarnClientServiceKept, "Service "+t.out.ClientService,
			fmt.Sprintf("the legacy client Service %s is left in place and keeps selecting the members (its selector matches this operator's labels), but nothing manages it any more", t.out.ClientService),
			fmt.Sprintf("move its clients to %s or %s, then delete it", c.Name, desired.ClientServiceName(c.Name)))
	}
}

func (t *translator) translateServiceTemplate(st *legacy.EmbeddedService) {
	cs := &etcdv1alpha2.ClientServiceSpec{}
	switch st.Spec.Type {
	case "", corev1.ServiceTypeClusterIP:
	case corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
		cs.Type = etcdv1alpha2.ClientServiceType(st.Spec.Type)
	default:
		t.warn(WarnServiceTemplateDropped, "spec.serviceTemplate.spec.type", fmt.Sprintf("type %s is dropped; the client Service is a ClusterIP Service", st.Spec.Type), "")
	}
	for k, v := range st.Annotations {
		if strings.HasPrefix(k, etcdv1alpha2.ReservedPrefix) {
			t.warn(WarnMetadataKeyDropped, "spec.serviceTemplate.metadata.annotations."+k, "keys with the prefix "+etcdv1alpha2.ReservedPrefix+" belong to the operator and are dropped", "")
			continue
		}
		if cs.Annotations == nil {
			cs.Annotations = map[string]string{}
		}
		cs.Annotations[k] = v
	}
	labels := make([]string, 0, len(st.Labels))
	for k := range st.Labels {
		labels = append(labels, k)
	}
	sort.Strings(labels)
	for _, k := range labels {
		t.warn(WarnServiceTemplateDropped, "spec.serviceTemplate.metadata.labels."+k, "client Service labels come from spec.additionalMetadata; this one is dropped", "")
	}
	rest := st.Spec.DeepCopy()
	rest.Type = ""
	t.dropFields(WarnServiceTemplateDropped, "spec.serviceTemplate.spec", rest, serviceSpecFields, "")
	if cs.Type != "" && !t.authenticatedClients() {
		cs.AllowUnauthenticated = true
		t.warnSecurity(WarnUnauthenticatedExposed, "spec.serviceTemplate.spec.type",
			fmt.Sprintf("the legacy client Service is a %s without client authentication; kept so with clientService.allowUnauthenticated: true, and anyone who reaches it can read and write every key", cs.Type),
			"turn on auth or client certificates, or make the Service ClusterIP")
	}
	if cs.Type != "" || cs.Annotations != nil {
		t.spec.ClientService = cs
	}
}

// authenticatedClients mirrors the API's rule for exposed Services: client TLS with auth or
// client certificates.
func (t *translator) authenticatedClients() bool {
	tls := t.spec.TLS
	if tls == nil || tls.Client == nil {
		return false
	}
	return (t.spec.Auth != nil && t.spec.Auth.Enabled) || tls.Client.OperatorClientSecretRef != nil
}

// releaseKeys mark objects a Helm or GitOps release owns, which would prune the legacy
// headless Service once the legacy EtcdCluster is gone from the release.
var releaseKeys = map[string]string{
	"helm.sh/chart": "", "app.kubernetes.io/managed-by": "Helm", "meta.helm.sh/release-name": "",
	"argocd.argoproj.io/instance": "", "argocd.argoproj.io/tracking-id": "",
	"kustomize.toolkit.fluxcd.io/name": "", "helm.toolkit.fluxcd.io/name": "",
}

func (t *translator) checkReleaseLabels(svc *corev1.Service) {
	var found []string
	for _, m := range []map[string]string{svc.Labels, svc.Annotations} {
		for k, v := range m {
			if want, ok := releaseKeys[k]; ok && (want == "" || want == v) {
				found = append(found, k+"="+v)
			}
		}
	}
	if len(found) == 0 {
		return
	}
	sort.Strings(found)
	t.warn(WarnReleaseLabels, "Service "+svc.Name,
		fmt.Sprintf("the legacy headless Service carries release metadata (%s): if that release prunes it, adopted members lose their DNS names and the cluster its quorum", strings.Join(found, ", ")),
		"exclude the Service from pruning (for example helm.sh/resource-policy: keep, or argocd.argoproj.io/sync-options: Prune=false) before migrating")
}

// checkPDB warns when the legacy budget allowed fewer disruptions than the operator's
// (minAvailable = quorum of the voters) will.
func (t *translator) checkPDB(spec legacy.PodDisruptionBudgetSpec) {
	n := t.liveMembers()
	if n == 0 {
		return
	}
	legacyAllowed := n - (int(t.in.Cluster.Replicas())/2 + 1)
	switch {
	case spec.MaxUnavailable != nil:
		v, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, n, true)
		if err != nil {
			return
		}
		legacyAllowed = v
	case spec.MinAvailable != nil:
		v, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, n, true)
		if err != nil {
			return
		}
		legacyAllowed = n - v
	}
	ours := n - (n/2 + 1)
	if legacyAllowed < ours {
		t.warn(WarnPDBStricter, "spec.podDisruptionBudgetTemplate",
			fmt.Sprintf("the legacy budget allowed %d of %d members to be disrupted; the operator's PDB (minAvailable = quorum) allows %d", max(legacyAllowed, 0), n, ours),
			"")
	}
}

// liveMembers is the member count the cluster is adopted with.
func (t *translator) liveMembers() int {
	if t.in.Etcd != nil {
		return len(t.in.Etcd.Members)
	}
	return len(t.in.Pods)
}
