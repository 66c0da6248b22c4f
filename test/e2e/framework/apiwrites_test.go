package framework

import "testing"

func TestWriteVerb(t *testing.T) {
	for _, c := range []struct {
		method, path, verb string
		write              bool
	}{
		{"GET", "/api/v1/namespaces/n/pods/etcd-0", "", false},
		{"POST", "/api/v1/namespaces/n/pods/etcd-0/portforward", "", false},
		{"POST", "/apis/etcd.example/v1alpha2/namespaces/n/etcdclusters", "create", true},
		{"PUT", "/apis/etcd.example/v1alpha2/namespaces/n/etcdclusters/etcd/status", "update", true},
		{"PATCH", "/api/v1/namespaces/n/pods/etcd-0", "patch", true},
		{"DELETE", "/apis/apps/v1/namespaces/n/statefulsets/etcd", "delete", true},
	} {
		verb, ok := WriteVerb(c.method, c.path)
		if verb != c.verb || ok != c.write {
			t.Errorf("WriteVerb(%s, %s) = %q, %v; want %q, %v", c.method, c.path, verb, ok, c.verb, c.write)
		}
	}
}

func TestAPIResourcePath(t *testing.T) {
	for path, want := range map[string]string{
		"/apis/apps/v1/namespaces/n/statefulsets/etcd":                       "statefulsets/etcd",
		"/api/v1/namespaces/n/persistentvolumeclaims/data-etcd-0":            "persistentvolumeclaims/data-etcd-0",
		"/apis/etcd.example/v1alpha2/namespaces/n/etcdmembers/etcd-0/status": "etcdmembers/etcd-0/status",
		"/api/v1/namespaces/n/services":                                      "services",
		"/apis/rbac.authorization.k8s.io/v1/clusterroles/x":                  "clusterroles/x",
		"/api/v1/nodes/n1": "nodes/n1",
	} {
		if got := APIResourcePath(path); got != want {
			t.Errorf("APIResourcePath(%s) = %q, want %q", path, got, want)
		}
	}
}
