# etcd-operator developer entry points. `make help` lists them.
# Every pinned version that is not a Go dependency lives in hack/versions.env.
include hack/versions.env

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

# Go developer tools are `tool` dependencies of hack/tools/go.mod: no download scripts.
GO_TOOL := go tool -modfile=hack/tools/go.mod
CONTROLLER_GEN := $(GO_TOOL) controller-gen
GOLANGCI_LINT := $(GO_TOOL) golangci-lint

# Binaries built from pinned Go modules are cached by version outside the work tree.
export ETCD_OPERATOR_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/etcd-operator
BIN_DIR := $(CURDIR)/bin

# go test's default 10-minute limit per package leaves too little room for the etcdcluster
# envtest suite under -race or on a loaded machine (real etcd processes, crash tests at every
# step of each flow, 16 at a time: about 3 to 5 minutes on 2 cores).
GO_TEST_FLAGS ?= -timeout 30m

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z0-9_.-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
# gotypesalias=0: controller-gen's deepcopy generator (v0.20) cannot copy a map whose values are
# an alias type (api/v1alpha2 LabelValue, AnnotationValue); with the old representation it sees
# plain strings and writes the same code as for map[string]string. Go 1.27 drops the setting:
# by then the generator must handle aliases (its fineToShallowCopy lacks a *types.Alias case).
generate: ## Generate deepcopy code for api/.
	GODEBUG=gotypesalias=0 $(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: ## Generate CRDs into config/crd/bases, RBAC into config/rbac, the namespace-scoped install's Roles, the chart's parts that come from them and the plain Prometheus rule file.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=etcd-operator paths=./internal/... output:rbac:artifacts:config=config/rbac
	go run ./hack/namespacedrbac config/rbac/role.yaml config/namespaced
	go run ./hack/promrules config/prometheus/alerts.yaml config/prometheus/rules.yaml
	go run ./hack/chartgen

.PHONY: fmt
fmt: ## Format Go code.
	gofmt -s -w $$(git ls-files '*.go')

.PHONY: lint
lint: ## Run golangci-lint (pinned in hack/tools/go.mod, linters listed in .golangci.yml).
	$(GOLANGCI_LINT) run --allow-parallel-runners ./...

.PHONY: verify
verify: ## Fail on stale generated files, an untidy go.mod, or lint findings.
	hack/verify.sh

##@ Test

.PHONY: envtest-assets
envtest-assets: ## Build (or reuse) kube-apiserver, etcd and kubectl for the envtest tier; prints the folder.
	@go run ./hack/binaries envtest

.PHONY: test
test: ## Unit and integration tests against a real kube-apiserver, etcd of every supported minor, an S3 server, helm, promtool and Prometheus (built on first use).
	@assets="$$(go run ./hack/binaries envtest)"; \
	etcd_dirs="$$(go run ./hack/binaries etcd | paste -sd: -)"; \
	s3server_dir="$$(go run ./hack/binaries s3server)"; \
	helm_dir="$$(go run ./hack/binaries helm)"; \
	promtool_dir="$$(go run ./hack/binaries promtool)"; \
	prometheus_dir="$$(go run ./hack/binaries prometheus)"; \
	echo "KUBEBUILDER_ASSETS=$$assets"; \
	echo "ETCD_BIN_DIRS=$$etcd_dirs"; \
	echo "S3SERVER_BIN_DIR=$$s3server_dir"; \
	echo "HELM_BIN_DIR=$$helm_dir"; \
	echo "PROMTOOL_BIN_DIR=$$promtool_dir"; \
	echo "PROMETHEUS_BIN_DIR=$$prometheus_dir"; \
	KUBEBUILDER_ASSETS="$$assets" ETCD_BIN_DIRS="$$etcd_dirs" S3SERVER_BIN_DIR="$$s3server_dir" HELM_BIN_DIR="$$helm_dir" PROMTOOL_BIN_DIR="$$promtool_dir" PROMETHEUS_BIN_DIR="$$prometheus_dir" go test $(GO_TEST_FLAGS) ./...

.PHONY: test-race
test-race: GO_TEST_FLAGS += -race
test-race: test ## `make test` with the race detector.

FUZZTIME ?= 10s

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 10s); corpora live in testdata/fuzz.
	@for file in $$(git grep -l '^func Fuzz' -- '*_test.go'); do \
		pkg=./$$(dirname $$file); \
		for target in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$file); do \
			echo "fuzz $$pkg $$target ($(FUZZTIME))"; \
			go test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

##@ Build

.PHONY: build
build: ## Build the operator, the kubectl-etcd plugin and etcd-migrate into bin/.
	go build -o $(BIN_DIR)/etcd-operator ./cmd/etcd-operator
	go build -o $(BIN_DIR)/kubectl-etcd ./cmd/kubectl-etcd
	go build -o $(BIN_DIR)/etcd-migrate ./cmd/etcd-migrate

# Targets owned by one area each (local cluster, e2e, demo) live in hack/make/*.mk.
-include hack/make/*.mk
