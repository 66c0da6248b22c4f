package framework

import (
	"net/http"
	"strings"
)

// WriteVerb is the API verb of a mutating request, false for reads and for port-forwards (a
// create on pods/portforward that writes nothing).
func WriteVerb(method, path string) (string, bool) {
	verb, ok := map[string]string{http.MethodPost: "create", http.MethodPut: "update", http.MethodPatch: "patch", http.MethodDelete: "delete"}[method]
	if !ok || strings.HasSuffix(strings.TrimSuffix(path, "/"), "/portforward") {
		return "", false
	}
	return verb, true
}

// APIResourcePath is an API path without its prefix, group, version and namespace:
// /apis/apps/v1/namespaces/n/statefulsets/etcd → statefulsets/etcd.
func APIResourcePath(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+2 < len(segs); i++ {
		if segs[i] == "namespaces" {
			return strings.Join(segs[i+2:], "/")
		}
	}
	switch {
	case len(segs) > 2 && segs[0] == "api":
		return strings.Join(segs[2:], "/")
	case len(segs) > 3 && segs[0] == "apis":
		return strings.Join(segs[3:], "/")
	}
	return path
}
