#!/usr/bin/env bash
# Fails when generated files are stale, a go.mod is untidy, code is unformatted, lint finds
# something, or helm lint or helm template fails on the chart. CI runs it on a fresh clone, so
# any difference it finds was never committed.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*" >&2; }

step "regenerate deepcopy, CRDs, RBAC and the chart's generated parts"
make --no-print-directory generate manifests

step "tidy go.mod files"
go mod tidy
(cd hack/tools && go mod tidy)
(cd hack/certmanager && go mod tidy)
(cd hack/s3server && go mod tidy)

step "compare with what is committed"
if ! git diff --exit-code --stat -- . || [ -n "$(git status --porcelain --untracked-files=all -- api config charts go.mod go.sum hack/tools hack/certmanager hack/s3server)" ]; then
	git status --short -- . >&2
	echo "verify: generated files or go.mod are stale; run 'make generate manifests && go mod tidy' and commit the result" >&2
	exit 1
fi

step "lint"
make --no-print-directory lint
# hack/certmanager and hack/s3server are modules of their own (they pin cert-manager and
# SeaweedFS), which ./... does not reach. Linting them compiles their whole dependency graph;
# with the build settings of hack/binaries (static, -trimpath) those compilations are the ones
# the binaries' own build reuses from Go's build cache, instead of a second copy on a cold
# machine (docs/local-cluster.md, "Pinned binaries").
# The linter binary is the one built above; only the packages it loads take those settings.
golangci_lint=$(go tool -modfile=hack/tools/go.mod -n golangci-lint)
for mod in hack/certmanager hack/s3server; do
	(cd "$mod" && CGO_ENABLED=0 GOWORK=off GOFLAGS="-buildvcs=false -trimpath" \
		"$golangci_lint" run --allow-parallel-runners --config ../../.golangci.yml ./...)
done
step "helm lint and helm template (the pinned helm, built on first use)"
make --no-print-directory chart-lint
echo "verify: ok" >&2
