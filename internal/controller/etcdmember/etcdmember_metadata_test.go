package etcdmember

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOwnedMetadataKeys(t *testing.T) {
	t.Parallel()
	entry := func(manager string, op metav1.ManagedFieldsOperationType, raw string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsV1: &metav1.FieldsV1{Raw: []byte(raw)}}
	}
	entries := []metav1.ManagedFieldsEntry{
		entry(FieldManagerAdditionalMetadata, metav1.ManagedFieldsOperationApply,
			`{"f:metadata":{"f:labels":{".":{},"f:team":{},"f:example.com/tier":{}},"f:annotations":{"f:note":{}}}}`),
		entry(FieldManagerAdditionalMetadata, metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{"f:labels":{"f:by-update":{}}}}`),
		entry("someone-else", metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:labels":{"f:theirs":{}}}}`),
		entry(FieldManagerAdditionalMetadata, metav1.ManagedFieldsOperationApply, `not json`),
	}
	labels, annotations := ownedMetadataKeys(entries, FieldManagerAdditionalMetadata)
	if diff := cmp.Diff(map[string]bool{"team": true, "example.com/tier": true}, labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"note": true}, annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

func TestNeedsApply(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		current, want map[string]string
		owned         map[string]bool
		apply         bool
	}{
		"in place and owned":                    {map[string]string{"a": "1", "x": "y"}, map[string]string{"a": "1"}, map[string]bool{"a": true}, false},
		"nothing wanted, nothing owned":         {map[string]string{"x": "y"}, nil, nil, false},
		"wanted key missing":                    {map[string]string{}, map[string]string{"a": "1"}, nil, true},
		"wanted value differs":                  {map[string]string{"a": "0"}, map[string]string{"a": "1"}, map[string]bool{"a": true}, true},
		"owned key no longer wanted":            {map[string]string{"a": "1"}, nil, map[string]bool{"a": true}, true},
		"present but set by someone else: keep": {map[string]string{"a": "1"}, map[string]string{"a": "1"}, nil, false},
	} {
		if got := needsApply(tc.current, tc.want, tc.owned); got != tc.apply {
			t.Errorf("%s: needsApply = %v, want %v", name, got, tc.apply)
		}
	}
}
