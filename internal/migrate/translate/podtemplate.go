package translate

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

// podSpecFields are the PodSpec fields that have a home in this project's API; translated
// below. Everything else in podTemplate.spec is dropped and named in a warning.
var podSpecFields = map[string]bool{
	"affinity": true, "topologySpreadConstraints": true, "imagePullSecrets": true, "nodeSelector": true,
	"tolerations": true, "priorityClassName": true, "securityContext": true, "containers": true,
}

// untilRoll ends the warnings about dropped Pod fields.
const untilRoll = "; members keep it until their first roll"

// etcdContainerFields are the etcd container's fields with a home: its image is the version
// (translateVersion), its resources spec.resources.
var etcdContainerFields = map[string]bool{"name": true, "image": true, "resources": true}

// translatePodTemplate maps podTemplate onto the member Pod fields of spec; this project also
// carries nodeSelector, tolerations, priorityClassName and a restricted securityContext, which
// the reference dropped.
func (t *translator) translatePodTemplate() {
	pt := t.in.Cluster.Spec.PodTemplate
	ps := pt.Spec
	t.spec.Affinity = ps.Affinity
	t.spec.TopologySpreadConstraints = ps.TopologySpreadConstraints
	t.spec.ImagePullSecrets = ps.ImagePullSecrets
	t.spec.NodeSelector = ps.NodeSelector
	t.spec.Tolerations = ps.Tolerations
	t.spec.PriorityClassName = ps.PriorityClassName
	t.spec.PodSecurityContext = t.securityContext(ps.SecurityContext)
	t.spec.AdditionalMetadata = t.additionalMetadata(pt.Labels, pt.Annotations)
	t.dropFields(WarnPodTemplateDropped, "spec.podTemplate.spec", &ps, podSpecFields, untilRoll)
	for i := range ps.Containers {
		c := &ps.Containers[i]
		if c.Name != legacy.ContainerName {
			t.warn(WarnPodTemplateDropped, "spec.podTemplate.spec.containers["+c.Name+"]",
				"the container "+c.Name+" is dropped: member Pods run etcd only; it keeps running until the member's first roll", "")
			continue
		}
		t.spec.Resources = *c.Resources.DeepCopy()
		t.dropFields(WarnPodTemplateDropped, "spec.podTemplate.spec.containers[etcd]", c, etcdContainerFields, untilRoll)
	}
	t.warn(WarnSecurityContext, "spec.podTemplate.spec.securityContext",
		fmt.Sprintf("members run with the restricted security context (UID, GID and fsGroup %d unless podSecurityContext says otherwise) from their first roll; fsGroupChangePolicy OnRootMismatch re-owns the data volume once at that restart, which takes longer on a large volume", desired.DefaultID),
		"")
}

// dropFields warns, under code, about every set field of obj (as its JSON object) not in keep;
// note ends each message.
func (t *translator) dropFields(code Code, prefix string, obj any, keep map[string]bool, note string) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		// Unreachable for API structs; refuse rather than silently drop unknown fields.
		t.refuse(RefusalInspectionFailed, prefix, "cannot read the field: "+err.Error(), "")
		return
	}
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if !keep[k] && !empty(v) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.warn(code, prefix+"."+k, k+" has no field in this operator's API and is dropped"+note, "")
	}
}

// empty is what omitempty would leave out.
func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	case string:
		return x == ""
	case bool:
		return !x
	case int64:
		return x == 0
	case float64:
		return x == 0
	}
	return false
}

// securityContext keeps the narrow overrides the restricted profile allows (docs/api.md,
// PodSecurityOverrides) and warns about the rest, root included.
func (t *translator) securityContext(sc *corev1.PodSecurityContext) *etcdv1alpha2.PodSecurityOverrides {
	if sc == nil {
		return nil
	}
	const field = "spec.podTemplate.spec.securityContext"
	o := &etcdv1alpha2.PodSecurityOverrides{FSGroupChangePolicy: sc.FSGroupChangePolicy}
	positive := func(name string, v *int64) *int64 {
		if v != nil && *v <= 0 {
			t.warn(WarnPodTemplateDropped, field+"."+name, fmt.Sprintf("%s %d is dropped: the restricted profile forbids ID 0", name, *v), "")
			return nil
		}
		return v
	}
	o.RunAsUser, o.RunAsGroup, o.FSGroup = positive("runAsUser", sc.RunAsUser), positive("runAsGroup", sc.RunAsGroup), positive("fsGroup", sc.FSGroup)
	for _, g := range sc.SupplementalGroups {
		if g > 0 {
			o.SupplementalGroups = append(o.SupplementalGroups, g)
		}
	}
	if se := sc.SELinuxOptions; se != nil {
		if se.User == "" && se.Role == "" && (se.Type == "" || strings.HasPrefix(se.Type, "container_")) {
			o.SELinuxOptions = se.DeepCopy()
		} else {
			t.warn(WarnPodTemplateDropped, field+".seLinuxOptions", "seLinuxOptions with a user, a role or a non-container type are dropped (restricted profile)", "")
		}
	}
	rest := sc.DeepCopy()
	rest.RunAsUser, rest.RunAsGroup, rest.FSGroup, rest.FSGroupChangePolicy, rest.SupplementalGroups, rest.SELinuxOptions = nil, nil, nil, nil, nil, nil
	if rest.RunAsNonRoot != nil && *rest.RunAsNonRoot {
		rest.RunAsNonRoot = nil // always true here
	}
	t.dropFields(WarnPodTemplateDropped, field, rest, nil, untilRoll)
	if equalOverrides(o, &etcdv1alpha2.PodSecurityOverrides{}) {
		return nil
	}
	return o
}

func equalOverrides(a, b *etcdv1alpha2.PodSecurityOverrides) bool {
	return a.RunAsUser == b.RunAsUser && a.RunAsGroup == b.RunAsGroup && a.FSGroup == b.FSGroup &&
		a.FSGroupChangePolicy == b.FSGroupChangePolicy && len(a.SupplementalGroups) == len(b.SupplementalGroups) &&
		a.SELinuxOptions == b.SELinuxOptions
}

// additionalMetadata carries podTemplate labels and annotations, without the legacy selector
// labels (the operator sets its own) and without reserved keys.
func (t *translator) additionalMetadata(labels, annotations map[string]string) *etcdv1alpha2.AdditionalMetadata {
	keep := func(kind string, in map[string]string, skip map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range in {
			switch {
			case strings.HasPrefix(k, etcdv1alpha2.ReservedPrefix):
				t.warn(WarnMetadataKeyDropped, "spec.podTemplate.metadata."+kind+"."+k, "keys with the prefix "+etcdv1alpha2.ReservedPrefix+" belong to the operator and are dropped", "")
			default:
				if sv, ok := skip[k]; !ok || sv != v {
					out[k] = v
				}
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	md := &etcdv1alpha2.AdditionalMetadata{
		Labels:      keep("labels", labels, legacy.Selector(t.in.Cluster.Name)),
		Annotations: keep("annotations", annotations, nil),
	}
	if md.Labels == nil && md.Annotations == nil {
		return nil
	}
	return md
}
