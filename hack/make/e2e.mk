# e2e targets (owner: e2e framework). Included by the root Makefile.
# The cluster itself comes from `make cluster-up` (hack/make/cluster.mk).

# Where the timing report (timing.json, timing.md) and failed tests' diagnostics go.
E2E_ARTIFACTS ?= $(CURDIR)/artifacts
# Overall bound for one e2e run; single waits inside tests have their own timeouts.
E2E_TIMEOUT ?= 45m
# Targets run before the tests: the cluster, then the operator built from the work tree.
E2E_SETUP ?= cluster-up deploy
# Packages to run; narrow it to iterate on one area (e.g. ./test/e2e/).
E2E_PACKAGES ?= ./test/e2e/...
# How many parallel e2e tests run at once. They spend their time waiting on the cluster, not
# computing, so more than the machine's cores (go test's default) fit: on 2 cores, 3 cut the
# smoke set's wall time without timeouts (docs/testing-e2e.md).
E2E_PARALLEL ?= 3
# -p 1: packages share one cluster, and one package's disruptive test (a stopped node) must not
# land in the middle of another package's test.
# S3SERVER_BIN_DIR: the backup tests run a real S3 server on the cluster's host (built on first use).
# HELM_BIN_DIR: the chart's scenario drives the pinned helm CLI (built on first use, docs/helm.md).
# PROMETHEUS_BIN_DIR: the monitoring scenario runs a real Prometheus on the host (built on first use).
E2E_GO_TEST = E2E_ARTIFACTS="$(E2E_ARTIFACTS)" S3SERVER_BIN_DIR="$$(go run ./hack/binaries s3server)" HELM_BIN_DIR="$$(go run ./hack/binaries helm)" PROMETHEUS_BIN_DIR="$$(go run ./hack/binaries prometheus)" nice go test -tags e2e -count=1 -p 1 -parallel $(E2E_PARALLEL) -timeout $(E2E_TIMEOUT) -v
# Runs the setup targets and exports how long they took, so the timing report has "cluster-up".
E2E_RUN_SETUP = rm -f "$(E2E_ARTIFACTS)/timing.json" "$(E2E_ARTIFACTS)/timing.md"; export E2E_TIMING_MERGE=1; \
	start=$$(date +%s%N); \
	for target in $(E2E_SETUP); do $(MAKE) --no-print-directory $$target || exit $$?; done; \
	export E2E_SETUP_MS=$$(( ($$(date +%s%N) - start) / 1000000 )); \
	export E2E_SETUP_NOTE="make $(E2E_SETUP)"

##@ e2e

.PHONY: e2e
e2e: ## Bring the local cluster up and run the e2e smoke set (E2E_LABELS=smoke); report in artifacts/.
	@$(E2E_RUN_SETUP); \
	E2E_LABELS=smoke $(E2E_GO_TEST) $(E2E_PACKAGES)

.PHONY: e2e-full
e2e-full: ## Bring the local cluster up and run every e2e test (or those in E2E_LABELS).
	@$(E2E_RUN_SETUP); \
	E2E_LABELS="$(E2E_LABELS)" $(E2E_GO_TEST) $(E2E_PACKAGES)

.PHONY: e2e-build
e2e-build: ## Type-check and vet the e2e packages without running them (no cluster needed).
	go vet -tags e2e ./test/e2e/...
