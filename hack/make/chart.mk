##@ Helm chart

# The chart (docs/helm.md). Its CRD and RBAC templates, deletion guard, values table and schema
# are generated from config/ and values.yaml by `make manifests` (hack/chartgen).
CHART_DIR := charts/etcd-operator
# The helm CLI, built from its pinned module (HELM_VERSION in hack/versions.env) on first use.
HELM_BIN = "$$(go run ./hack/binaries helm)/helm"
# Every optional part, in the namespace-scoped mode with two namespaces.
CHART_ALL_ON := --set manager.watchNamespaces={etcd,team-b} --set namespace.create=true \
	--set metrics.serviceMonitor.enabled=true --set etcdMetrics.podMonitor.enabled=true \
	--set networkPolicy.enabled=true --set memberDeletionGuard.allowedUsers={alice} \
	--set monitoring.prometheusRule.enabled=true --set monitoring.grafanaDashboard.enabled=true

.PHONY: chart-lint
chart-lint: ## helm lint --strict and helm template the chart: default values, then every optional part in the namespaced mode.
	@helm=$(HELM_BIN); \
	for values in "" "$(CHART_ALL_ON)"; do \
		echo "helm lint --strict $(CHART_DIR) $$values"; \
		"$$helm" lint --strict $(CHART_DIR) $$values; \
		"$$helm" template etcd-operator $(CHART_DIR) --namespace etcd-operator-system $$values >/dev/null; \
	done

.PHONY: chart-package
chart-package: ## Package the chart into dist/, its version and appVersion stamped from VERSION (a release tag vX.Y.Z).
	@helm=$(HELM_BIN); v="$(VERSION)"; \
	"$$helm" package $(CHART_DIR) --version "$${v#v}" --app-version "$$v" --destination $(DIST_DIR)
