package desired

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// quorum is the number of voters a raft cluster of n voters needs to make progress: ⌊n/2⌋+1.
func quorum(n int32) int32 { return n/2 + 1 }

// PDB builds the cluster's PodDisruptionBudget (docs/design/quorum.md, "PDB arithmetic"), or
// returns nil when there are no voters, in which case the caller deletes any existing one.
//
// minAvailable is the quorum of max(voters, target): during a scale-up or bootstrap the budget
// already protects the quorum the cluster is heading for (a lone seed of a 3-member cluster
// cannot be drained), and during a scale-down it keeps protecting the larger membership until
// the removal has happened. It is an integer, never a percentage, so that it is exact. Only
// voters are selected: a learner's loss never costs quorum.
//
// unhealthyPodEvictionPolicy AlwaysAllow lets a drain evict a member that is not Ready: it does
// not count towards quorum anyway, and with the default policy a single crash-looping member
// would block every node drain.
func PDB(cluster *etcdv1alpha2.EtcdCluster, voters, target int32) *policyv1.PodDisruptionBudget {
	if voters <= 0 {
		return nil
	}
	minAvailable := intstr.FromInt32(quorum(max(voters, target)))
	return &policyv1.PodDisruptionBudget{
		TypeMeta: metav1.TypeMeta{APIVersion: policyv1.SchemeGroupVersion.String(), Kind: "PodDisruptionBudget"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            PDBName(cluster.Name),
			Namespace:       cluster.Namespace,
			Labels:          mergeMetadata(additionalLabels(cluster.Spec.AdditionalMetadata), ClusterLabels(cluster.Name)),
			Annotations:     mergeMetadata(additionalAnnotations(cluster.Spec.AdditionalMetadata), nil),
			OwnerReferences: []metav1.OwnerReference{clusterOwnerRef(cluster)},
		},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable:               &minAvailable,
			Selector:                   &metav1.LabelSelector{MatchLabels: VoterSelector(cluster.Name)},
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
		},
	}
}
