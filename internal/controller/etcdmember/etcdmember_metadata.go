package etcdmember

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
)

// FieldManagerAdditionalMetadata is the server-side apply field manager under which the member
// controller keeps a member's additionalMetadata on its Pod and PVC. Owning exactly those keys
// under a manager of their own is what lets a key removed from the spec be removed from the
// objects, without guessing which of an object's other keys belong to people or other tools.
const FieldManagerAdditionalMetadata = "etcd-operator-member-metadata"

var (
	podGVK = corev1.SchemeGroupVersion.WithKind("Pod")
	pvcGVK = corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")
)

// keepMetadata keeps an existing Pod's or PVC's metadata in line with the member: the operator's
// own labels (merge patch; role=voter removed from a non-voter's Pod) and the additionalMetadata
// keys (server-side apply). Each writes only when something differs.
func (r *Reconciler) keepMetadata(ctx context.Context, obj client.Object, gvk schema.GroupVersionKind,
	labels map[string]string, remove []string, m *etcdv1alpha2.EtcdMember) error {
	if err := r.patchMetadata(ctx, obj, labels, nil, remove); err != nil {
		return err
	}
	return r.applyAdditionalMetadata(ctx, obj, gvk, m)
}

// applyAdditionalMetadata server-side applies the member's additionalMetadata labels and
// annotations to obj under FieldManagerAdditionalMetadata. It writes when a wanted key is missing
// or different, or when the manager still owns a key that is no longer wanted (the apply then
// drops it). Ownership is read from obj's managedFields; if a cache strips those, removals are
// missed but no pass ever writes for nothing.
func (r *Reconciler) applyAdditionalMetadata(ctx context.Context, obj client.Object, gvk schema.GroupVersionKind, m *etcdv1alpha2.EtcdMember) error {
	labels, annotations := desired.AdditionalLabels(m), desired.AdditionalAnnotations(m)
	ownedLabels, ownedAnnotations := ownedMetadataKeys(obj.GetManagedFields(), FieldManagerAdditionalMetadata)
	if !needsApply(obj.GetLabels(), labels, ownedLabels) && !needsApply(obj.GetAnnotations(), annotations, ownedAnnotations) {
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(obj.GetNamespace())
	u.SetName(obj.GetName())
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	if err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(FieldManagerAdditionalMetadata), client.ForceOwnership); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("applying additionalMetadata to %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	return nil
}

// needsApply reports whether current lacks a wanted key or value, or still has a key owned that
// is no longer wanted.
func needsApply(current, want map[string]string, owned map[string]bool) bool {
	for k, v := range want {
		if cur, ok := current[k]; !ok || cur != v {
			return true
		}
	}
	for k := range owned {
		if _, ok := want[k]; !ok {
			return true
		}
	}
	return false
}

// ownedMetadataKeys returns the label and annotation keys the manager owns through server-side
// apply, from managedFields (fieldsV1: {"f:metadata":{"f:labels":{"f:<key>":{}}}}).
func ownedMetadataKeys(entries []metav1.ManagedFieldsEntry, manager string) (labels, annotations map[string]bool) {
	labels, annotations = map[string]bool{}, map[string]bool{}
	for _, e := range entries {
		if e.Manager != manager || e.Operation != metav1.ManagedFieldsOperationApply || e.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Metadata struct {
				Labels      map[string]json.RawMessage `json:"f:labels"`
				Annotations map[string]json.RawMessage `json:"f:annotations"`
			} `json:"f:metadata"`
		}
		if err := json.Unmarshal(e.FieldsV1.Raw, &fields); err != nil {
			continue
		}
		addKeys(labels, fields.Metadata.Labels)
		addKeys(annotations, fields.Metadata.Annotations)
	}
	return labels, annotations
}

// addKeys adds the map keys of a fieldsV1 map to set. Only "f:<key>" entries name keys; "." is
// the map itself.
func addKeys(set map[string]bool, fields map[string]json.RawMessage) {
	for k := range fields {
		if key, ok := strings.CutPrefix(k, "f:"); ok {
			set[key] = true
		}
	}
}

// podRemovableLabels are operator labels that must disappear from the Pod when the member no
// longer qualifies for them: role=voter from a member that is not (or no longer) a voter.
func podRemovableLabels(m *etcdv1alpha2.EtcdMember) []string {
	if m.Status.IsVoter {
		return nil
	}
	return []string{etcdv1alpha2.LabelRole}
}

// metadataPatch returns the merge patch that sets labels and annotations on obj and removes the
// labels in remove, or nil when obj already matches. Keys obj has but the maps do not are left
// alone: they may belong to other controllers or to people.
func metadataPatch(obj metav1.Object, labels, annotations map[string]string, remove []string) map[string]any {
	l := map[string]any{}
	for k, v := range labels {
		if cur, ok := obj.GetLabels()[k]; !ok || cur != v {
			l[k] = v
		}
	}
	for _, k := range remove {
		if _, ok := obj.GetLabels()[k]; ok {
			if _, keep := labels[k]; !keep {
				l[k] = nil
			}
		}
	}
	a := map[string]any{}
	for k, v := range annotations {
		if cur, ok := obj.GetAnnotations()[k]; !ok || cur != v {
			a[k] = v
		}
	}
	if len(l) == 0 && len(a) == 0 {
		return nil
	}
	md := map[string]any{}
	if len(l) > 0 {
		md["labels"] = l
	}
	if len(a) > 0 {
		md["annotations"] = a
	}
	return map[string]any{"metadata": md}
}

// patchMetadata applies metadataPatch to obj, preconditioned on its UID, and writes nothing when
// there is nothing to change.
func (r *Reconciler) patchMetadata(ctx context.Context, obj client.Object, labels, annotations map[string]string, remove []string) error {
	p := metadataPatch(obj, labels, annotations, remove)
	if p == nil {
		return nil
	}
	p["metadata"].(map[string]any)["uid"] = string(obj.GetUID())
	data, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encoding a metadata patch: %w", err)
	}
	if err := r.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("updating labels and annotations of %s: %w", obj.GetName(), err)
	}
	return nil
}
