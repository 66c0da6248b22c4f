package v1alpha2

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupVersion is the API group and version of every kind in this package.
var GroupVersion = schema.GroupVersion{Group: "etcd-operator.cozystack.io", Version: "v1alpha2"}

// SchemeBuilder registers this package's kinds with a runtime.Scheme.
var SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

// AddToScheme adds this package's kinds to a runtime.Scheme.
var AddToScheme = SchemeBuilder.AddToScheme
