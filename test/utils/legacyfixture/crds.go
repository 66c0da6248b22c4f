package legacyfixture

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

// CRDs are the three legacy CRDs. Their schemas are structural but keep every field of spec
// and status (x-kubernetes-preserve-unknown-fields): the fixture must store whatever a legacy
// release accepted, and only the CRD default of spec.replicas is reproduced, because a legacy
// cluster that omits it runs 3 members.
func CRDs() []*apiextensionsv1.CustomResourceDefinition {
	clusterSpec := preserved()
	clusterSpec.Properties = map[string]apiextensionsv1.JSONSchemaProps{
		"replicas": {Type: "integer", Format: "int32", Minimum: ptr.To(0.0), Default: &apiextensionsv1.JSON{Raw: []byte("3")}},
	}
	return []*apiextensionsv1.CustomResourceDefinition{
		crd("etcdclusters", "etcdcluster", legacy.KindEtcdCluster, clusterSpec),
		crd("etcdbackups", "etcdbackup", legacy.KindEtcdBackup, preserved()),
		crd("etcdbackupschedules", "etcdbackupschedule", legacy.KindEtcdBackupSchedule, preserved()),
	}
}

func preserved() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
}

func crd(plural, singular, kind string, spec apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + legacy.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: legacy.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: plural, Singular: singular, Kind: kind, ListKind: kind + "List",
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: legacy.Version, Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"apiVersion": {Type: "string"},
						"kind":       {Type: "string"},
						"metadata":   {Type: "object"},
						"spec":       spec,
						"status":     preserved(),
					},
				}},
			}},
		},
	}
}
