package desired

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// TestPDBArithmetic is the table of docs/design/quorum.md, "PDB arithmetic", plus the edges.
func TestPDBArithmetic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		voters, target int32
		want           int32 // 0 = no PDB
	}{
		{"steady 1", 1, 1, 1},
		{"steady 3", 3, 3, 2},
		{"steady 5", 5, 5, 3},
		{"steady 7", 7, 7, 4},
		{"bootstrap of 3, seed only", 1, 3, 2},
		{"bootstrap of 5, seed only", 1, 5, 3},
		{"scaling 3 to 5, 4 voters", 4, 5, 3},
		{"scaling 5 to 3, 4 voters", 4, 3, 3},
		{"even membership", 2, 2, 2},
		{"pausing 3 to 0, 1 voter left", 1, 0, 1},
		{"paused", 0, 0, 0},
		{"no voters yet", 0, 3, 0},
		{"negative voters", -1, 3, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pdb := PDB(newCluster(), tc.voters, tc.target)
			if tc.want == 0 {
				if pdb != nil {
					t.Fatalf("PDB(%d, %d) = %+v, want nil", tc.voters, tc.target, pdb)
				}
				return
			}
			if pdb == nil {
				t.Fatalf("PDB(%d, %d) = nil", tc.voters, tc.target)
			}
			if got := pdb.Spec.MinAvailable; got.Type != intstr.Int || got.IntVal != tc.want {
				t.Errorf("minAvailable = %s, want integer %d", got.String(), tc.want)
			}
		})
	}
}

func TestPDBGolden(t *testing.T) {
	t.Parallel()
	c := newCluster(func(c *etcdv1alpha2.EtcdCluster) {
		c.Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{
			Labels:      map[string]string{"team": "db"},
			Annotations: map[string]string{"note": "x"},
		}
	})
	minAvailable := intstr.FromInt32(2)
	want := &policyv1.PodDisruptionBudget{
		TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "main",
			Namespace: "prod",
			Labels: map[string]string{
				"team":                               "db",
				"app.kubernetes.io/name":             "etcd",
				"app.kubernetes.io/instance":         "main",
				"app.kubernetes.io/managed-by":       "etcd-operator",
				"etcd-operator.cozystack.io/cluster": "main",
			},
			Annotations: map[string]string{"note": "x"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "etcd-operator.cozystack.io/v1alpha2", Kind: "EtcdCluster", Name: "main", UID: "cluster-uid-1",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{
				"etcd-operator.cozystack.io/cluster": "main",
				"etcd-operator.cozystack.io/role":    "voter",
			}},
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
		},
	}
	if diff := cmp.Diff(want, PDB(c, 3, 3)); diff != "" {
		t.Errorf("PDB mismatch (-want +got):\n%s", diff)
	}
}
