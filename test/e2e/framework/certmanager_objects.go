package framework

import (
	"fmt"
	"os"
	"path/filepath"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// CertManagerNamespace is where InstallCertManager runs cert-manager's controllers, and where
// ClusterIssuers keep their CA Secrets (its --cluster-resource-namespace).
const CertManagerNamespace = "cert-manager"

// certManagerName names the controller's ServiceAccount, ClusterRole, ClusterRoleBinding and
// Deployment.
const certManagerName = "cert-manager-controller"

// certManagerCRDFiles are the CRDs of cert-manager.io in cert-manager's deploy/crds: the
// controllers hack/certmanager runs need no acme.cert-manager.io kinds.
var certManagerCRDFiles = []string{
	"cert-manager.io_certificaterequests.yaml",
	"cert-manager.io_certificates.yaml",
	"cert-manager.io_clusterissuers.yaml",
	"cert-manager.io_issuers.yaml",
}

// CertManagerCRDs reads the cert-manager.io CRDs from dir, cert-manager's deploy/crds in the
// module cache (`go run ./hack/binaries certmanager-crds`); they are plain YAML, not templates.
func CertManagerCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, name := range certManagerCRDFiles {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("reading cert-manager's CRDs: %w", err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", name, err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// certManagerObjects are the namespace, ServiceAccount, RBAC and Deployment that run image, in
// the order they are created. The rights are those of the controllers hack/certmanager runs:
// their own kinds, Secrets (the issued keys and certificates, the CAs) and Events;
// .../finalizers because a CertificateRequest's ownerReference to its Certificate blocks owner
// deletion, which the local cluster's OwnerReferencesPermissionEnforcement admission checks.
func certManagerObjects(image string) []client.Object {
	labels := map[string]string{"app.kubernetes.io/name": certManagerName}
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	kinds := []string{"certificates", "certificaterequests", "issuers", "clusterissuers"}
	var status []string
	for _, k := range kinds {
		status = append(status, k+"/status")
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: certManagerName, Labels: labels}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"cert-manager.io"}, Resources: kinds, Verbs: all},
		{APIGroups: []string{"cert-manager.io"}, Resources: status, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{"cert-manager.io"}, Resources: []string{"certificates/finalizers", "certificaterequests/finalizers"}, Verbs: []string{"update"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: certManagerName, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: certManagerName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: CertManagerNamespace, Name: certManagerName}},
	}
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: CertManagerNamespace, Labels: labels}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: CertManagerNamespace, Name: certManagerName, Labels: labels}},
		role, binding, certManagerDeployment(image, labels),
	}
}

// certManagerDeployment runs one replica, replaced rather than surged on a change: the
// controllers run without leader election, so two at once would race.
func certManagerDeployment(image string, labels map[string]string) *appsv1.Deployment {
	container := corev1.Container{
		Name:            "controller",
		Image:           image,
		ImagePullPolicy: corev1.PullNever, // the local cluster has no registry; up imported it
		Args:            []string{"--cluster-resource-namespace=$(POD_NAMESPACE)", "-v=2"},
		Env: []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: CertManagerNamespace, Name: certManagerName, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: certManagerName,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{container},
				},
			},
		},
	}
}
