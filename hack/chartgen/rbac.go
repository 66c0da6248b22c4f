package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// The rules of the chart's roles, as named templates that templates/rbac.yaml includes:
// cluster (the ClusterRole of config/rbac), watched (the Role of each namespace of the
// namespace-scoped install, config/namespaced/watched) and operatorNamespace (leader election,
// the operator's own Pod and its Events in its own namespace: the Role of config/rbac and of
// config/namespaced/operator, which hold the same rules).
const rbacTemplate = "_generated-rbac.tpl"

func writeRBAC(root string) error {
	docs, err := readRoles(filepath.Join(root, clusterRole))
	if err != nil {
		return err
	}
	cluster, own, err := splitClusterRole(docs)
	if err != nil {
		return err
	}
	watched, err := singleRole(filepath.Join(root, watchedRole))
	if err != nil {
		return err
	}
	nsOwn, err := singleRole(filepath.Join(root, operatorRole))
	if err != nil {
		return err
	}
	if !rulesEqual(own, nsOwn) {
		return fmt.Errorf("the Role of %s and %s differ: run hack/namespacedrbac first (make manifests)", clusterRole, operatorRole)
	}
	var b bytes.Buffer
	b.WriteString(generatedBy(clusterRole + " and " + watchedRole))
	for _, d := range []struct {
		name, source string
		rules        []rbacv1.PolicyRule
	}{
		{"cluster", clusterRole + " (ClusterRole)", cluster},
		{"watched", watchedRole, watched},
		{"operatorNamespace", clusterRole + " (Role)", own},
	} {
		text, err := yaml.Marshal(d.rules)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "\n{{/* The rules of %s. */}}\n{{- define \"etcd-operator.rules.%s\" }}\n%s{{- end }}\n", d.source, d.name, text)
	}
	return os.WriteFile(filepath.Join(root, chartDir, "templates", rbacTemplate), b.Bytes(), 0o644)
}

// role is the part of a ClusterRole or Role the chart uses.
type role struct {
	Kind  string              `json:"kind"`
	Rules []rbacv1.PolicyRule `json:"rules"`
}

// readRoles reads every document of a multi-document YAML file of roles.
func readRoles(path string) ([]role, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var roles []role
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var r role
		if err := yaml.Unmarshal([]byte(strings.TrimPrefix(doc, "---\n")), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if r.Kind == "" && len(r.Rules) == 0 {
			continue // comments only
		}
		roles = append(roles, r)
	}
	return roles, nil
}

// splitClusterRole returns the rules of the one ClusterRole and the one Role that controller-gen
// writes into config/rbac/role.yaml.
func splitClusterRole(roles []role) (cluster, own []rbacv1.PolicyRule, err error) {
	var clusterRoles, ownRoles int
	for _, r := range roles {
		switch r.Kind {
		case "ClusterRole":
			cluster, clusterRoles = r.Rules, clusterRoles+1
		case "Role":
			own, ownRoles = r.Rules, ownRoles+1
		default:
			return nil, nil, fmt.Errorf("%s: unexpected kind %q", clusterRole, r.Kind)
		}
	}
	if clusterRoles != 1 || ownRoles != 1 {
		return nil, nil, fmt.Errorf("%s: want one ClusterRole and one Role, got %d and %d", clusterRole, clusterRoles, ownRoles)
	}
	return cluster, own, nil
}

// singleRole reads a file of one Role, as hack/namespacedrbac writes them.
func singleRole(path string) ([]rbacv1.PolicyRule, error) {
	roles, err := readRoles(path)
	if err != nil {
		return nil, err
	}
	if len(roles) != 1 || roles[0].Kind != "Role" {
		return nil, fmt.Errorf("%s: want exactly one Role", path)
	}
	return roles[0].Rules, nil
}

func rulesEqual(a, b []rbacv1.PolicyRule) bool {
	x, errX := yaml.Marshal(a)
	y, errY := yaml.Marshal(b)
	return errX == nil && errY == nil && bytes.Equal(x, y)
}
