package legacyfixture

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/test/utils/testpki"
)

// Set is one legacy cluster's objects, as a legacy release leaves them.
type Set struct {
	// Options are the options with defaults applied.
	Options Options
	// CRDs are the three legacy CRDs (cluster-scoped; shared by every Set).
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Cluster is the legacy EtcdCluster.
	Cluster *legacy.EtcdCluster
	// StatefulSet runs the members.
	StatefulSet *appsv1.StatefulSet
	// HeadlessService gives members their DNS names; ClientService is the ClusterIP Service.
	HeadlessService, ClientService *corev1.Service
	// StateConfigMap is the etcd container's envFrom.
	StateConfigMap *corev1.ConfigMap
	// PDB is nil unless Options.PDB.
	PDB *policyv1.PodDisruptionBudget
	// Secrets are the TLS Secrets of the variant, in the order of the legacy TLS fields.
	Secrets []*corev1.Secret
	// CAs are the PEM CA certificates by role ("peer", "server", "client"), for tests that
	// dial the cluster or check a migrated bundle.
	CAs map[string][]byte
	// issuers are the CAs themselves, keys included, so that Reissued can sign again.
	issuers map[string]*testpki.CA
}

// Build renders the objects of one legacy cluster.
func Build(opts Options) (*Set, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Set{Options: o, CRDs: CRDs(), Cluster: cluster(o), CAs: map[string][]byte{}, issuers: map[string]*testpki.CA{}}
	if s.Secrets, err = tlsSecrets(o, s.issuers); err != nil {
		return nil, err
	}
	for role, ca := range s.issuers {
		s.CAs[role] = ca.CertPEM
	}
	s.StatefulSet = statefulSet(o, s.Cluster)
	s.HeadlessService = headlessService(o, s.Cluster)
	s.ClientService = clientService(o, s.Cluster)
	s.StateConfigMap = stateConfigMap(o, s.Cluster)
	s.PDB = pdb(o)
	for _, obj := range s.owned() {
		obj.SetOwnerReferences([]metav1.OwnerReference{ownerRef(o)})
	}
	return s, nil
}

// owned are the objects the legacy operator creates with a controller reference to the
// EtcdCluster (the Secrets are the user's).
func (s *Set) owned() []metav1.Object {
	out := []metav1.Object{s.StatefulSet, s.HeadlessService, s.ClientService, s.StateConfigMap}
	if s.PDB != nil {
		out = append(out, s.PDB)
	}
	return out
}

func ownerRef(o Options) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: legacy.GroupVersion.String(), Kind: legacy.KindEtcdCluster, Name: o.Name, UID: o.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

// cluster is the legacy EtcdCluster a user wrote, with the defaults its CRD and webhook fill
// in, and the status the legacy operator writes.
func cluster(o Options) *legacy.EtcdCluster {
	c := &legacy.EtcdCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: legacy.GroupVersion.String(), Kind: legacy.KindEtcdCluster},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, UID: o.UID},
		Spec: legacy.EtcdClusterSpec{
			Replicas: ptr.To(o.Replicas),
			Options:  o.Options,
			Storage:  storage(o),
		},
	}
	if o.Image != legacy.DefaultImage {
		c.Spec.PodTemplate.Spec.Containers = []corev1.Container{{Name: legacy.ContainerName, Image: o.Image}}
	}
	if o.HeadlessServiceName != "" {
		c.Spec.HeadlessServiceTemplate = &legacy.EmbeddedMetadataResource{EmbeddedObjectMetadata: legacy.EmbeddedObjectMetadata{Name: o.HeadlessServiceName}}
	}
	if o.PDB {
		c.Spec.PodDisruptionBudgetTemplate = &legacy.EmbeddedPodDisruptionBudget{}
	}
	if sec := security(o); sec != nil {
		c.Spec.Security = sec
	}
	c.Status.Conditions = conditions(o)
	return c
}

func storage(o Options) legacy.StorageSpec {
	if o.EmptyDir {
		return legacy.StorageSpec{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(o.StorageSize.DeepCopy())}}
	}
	spec := corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: o.StorageSize.DeepCopy()}},
	}
	if o.StorageClass != "" {
		spec.StorageClassName = ptr.To(o.StorageClass)
	}
	return legacy.StorageSpec{VolumeClaimTemplate: legacy.EmbeddedPersistentVolumeClaim{Spec: spec}}
}

func security(o Options) *legacy.SecuritySpec {
	if !o.serverTLS() && !o.Auth {
		return nil
	}
	sec := &legacy.SecuritySpec{EnableAuth: o.Auth}
	if o.serverTLS() {
		sec.TLS.ServerTrustedCASecret = o.secretName(roleServerCA)
		sec.TLS.ServerSecret = o.secretName(roleServer)
	}
	if o.peerTLS() {
		sec.TLS.PeerTrustedCASecret = o.secretName(rolePeerCA)
		sec.TLS.PeerSecret = o.secretName(rolePeer)
	}
	if o.clientTLS() {
		sec.TLS.ClientTrustedCASecret = o.secretName(roleClientCA)
		sec.TLS.ClientSecret = o.secretName(roleClient)
	}
	return sec
}

// conditions are what the legacy operator reports before and after the first quorum.
func conditions(o Options) []metav1.Condition {
	at := metav1.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	ready := metav1.Condition{Type: legacy.ConditionReady, Status: metav1.ConditionFalse, Reason: "WaitingForFirstQuorum",
		Message: "Waiting for first quorum to be established", LastTransitionTime: at}
	if o.Formed {
		ready = metav1.Condition{Type: legacy.ConditionReady, Status: metav1.ConditionTrue, Reason: "StatefulSetReady",
			Message: "Cluster StatefulSet is Ready", LastTransitionTime: at}
	}
	return []metav1.Condition{
		{Type: legacy.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "InitializationComplete",
			Message: "Cluster managed resources created", LastTransitionTime: at},
		ready,
	}
}

// pdb is the legacy PDB: the template's budget, or minAvailable = quorum of spec.replicas.
func pdb(o Options) *policyv1.PodDisruptionBudget {
	if !o.PDB {
		return nil
	}
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: legacy.PDBName(o.Name), Namespace: o.Namespace},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable:               ptr.To(intstr.FromInt32(o.Replicas/2 + 1)),
			Selector:                   &metav1.LabelSelector{MatchLabels: legacy.Selector(o.Name)},
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.IfHealthyBudget),
		},
	}
}
