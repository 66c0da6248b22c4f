##@ Deploy and demo

.PHONY: deploy
deploy: ## Build the operator image from the work tree and install it into the local cluster (starting it if needed).
	@hack/deploy.sh

.PHONY: demo
demo: ## Local cluster + operator + a 3-member EtcdCluster, left running (first run builds everything).
	@hack/demo.sh

.PHONY: demo-down
demo-down: ## Remove the demo: stops the local cluster and everything it created.
	@go run ./hack/localcluster down
