##@ Local cluster

# The local multi-node Kubernetes cluster (docs/local-cluster.md). Needs root. The first
# cluster-up builds every pinned binary and takes minutes; later ones take seconds.
LOCALCLUSTER := go run ./hack/localcluster

.PHONY: cluster-up
cluster-up: ## Start the local 3-node cluster (building what is missing); prints the kubeconfig path.
	@$(LOCALCLUSTER) up

.PHONY: cluster-down
cluster-down: ## Stop the local cluster and remove every process, bridge, rule, mount and netns it created.
	@$(LOCALCLUSTER) down

.PHONY: cluster-status
cluster-status: ## Show the local cluster's components, memory, nodes and DNS.
	@$(LOCALCLUSTER) status

.PHONY: cluster-binaries
cluster-binaries: ## Build (or reuse) every pinned binary: Kubernetes, etcd for each minor, CoreDNS, cert-manager, the S3 server, promtool, the Prometheus server.
	@go run ./hack/binaries all

.PHONY: cluster-probe
cluster-probe: ## Run the local cluster's probe tests, node loss and down/up included (brings the cluster up if needed).
	E2E_CLUSTER_DISRUPTIVE=1 go test -tags e2e -count=1 -timeout 20m -v ./test/e2e/cluster/...
