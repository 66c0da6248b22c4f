#!/usr/bin/env bash
# Installs the operator built from this work tree into the local cluster (docs/local-cluster.md),
# the way users run it: CRDs, RBAC and a Deployment from config/default, in-cluster.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${ETCD_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/etcd-operator}
kubectl="$(go run ./hack/binaries kubernetes)/kubectl"
export KUBECONFIG="$cache/localcluster/kubeconfig"
namespace=etcd-operator-system

say() { printf '>>> %s\n' "$*" >&2; }

# `localcluster up` is idempotent: on a running cluster it only rebuilds the images from the work
# tree and imports those that changed, the operator's among them.
say "building the operator image from the work tree (and the cluster, if it is not up)"
go run ./hack/localcluster up >&2

say "applying config/default (server-side: the EtcdCluster CRD is too large for client-side apply)"
"$kubectl" apply --server-side --force-conflicts -k config/default >&2

# The image tag stays localhost/etcd-operator:dev, so a new build must roll the Deployment by
# itself: the binary's digest in the Pod template changes exactly when the code does.
binary="$cache/localcluster/images/bin/etcd-operator"
digest=$(sha256sum "$binary" | cut -c1-16)
"$kubectl" -n "$namespace" patch deployment etcd-operator --type merge \
	-p "{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{\"local.etcd-operator/binary-sha256\":\"$digest\"}}}}}" >&2

say "waiting for the operator to be Ready"
"$kubectl" -n "$namespace" rollout status deployment/etcd-operator --timeout=180s >&2
say "operator $digest is running in namespace $namespace"
