// Package chart tests the Helm chart charts/etcd-operator with the real helm CLI, built from its
// pinned module (hack/binaries helm; HELM_BIN_DIR names its folder, as `make test` sets it), and
// without a cluster: the chart's default install renders the same objects as config/default,
// its namespace-scoped mode those of config/namespaced, and its values reach the operator's
// flags (docs/helm.md, "How the chart stays in sync with config/").
package chart
