##@ Release

# The plugin's version: the nearest tag (or the commit), as the binaries and the krew manifest
# carry it. Override for a release: make release VERSION=v0.3.0.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
DIST_DIR ?= $(CURDIR)/dist
# Where the archives are downloaded from; the krew manifest names <KREW_URI_BASE>/<archive>.
KREW_URI_BASE ?= https://github.com/etcd-operator/etcd-operator/releases/download/$(VERSION)

# Static binaries (no cgo), without local paths (-trimpath), each archived alone with a fixed
# time and owner so that the same commit gives the same SHA256SUMS. Windows gets a zip when zip
# is installed, else a tar.gz like the others (krew takes both).
.PHONY: release
release: ## Build kubectl-etcd for linux, darwin, windows × amd64, arm64 into dist/, with SHA256SUMS and the krew manifest dist/krew/etcd.yaml.
	@rm -rf $(DIST_DIR) && mkdir -p $(DIST_DIR)/build
	@for platform in $(RELEASE_PLATFORMS); do \
		os=$${platform%/*}; arch=$${platform#*/}; bin=kubectl-etcd; \
		if [ "$$os" = windows ]; then bin=kubectl-etcd.exe; fi; \
		dir=$(DIST_DIR)/build/$$os-$$arch; archive=$(DIST_DIR)/kubectl-etcd_$(VERSION)_$${os}_$${arch}; \
		echo "release: kubectl-etcd $(VERSION) $$os/$$arch"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" \
			-o $$dir/$$bin ./cmd/kubectl-etcd || exit 1; \
		touch -t 198001010000 $$dir/$$bin; \
		if [ "$$os" = windows ] && command -v zip >/dev/null; then \
			(cd $$dir && zip -q -X $$archive.zip $$bin) || exit 1; \
		else \
			tar -C $$dir --owner=0 --group=0 --numeric-owner -cf - $$bin | gzip -n > $$archive.tar.gz || exit 1; \
		fi; \
	done
	@rm -rf $(DIST_DIR)/build
	@cd $(DIST_DIR) && sha256sum kubectl-etcd_* > SHA256SUMS
	@go run ./hack/krewmanifest -version $(VERSION) -uri-base $(KREW_URI_BASE) -out $(DIST_DIR)/krew/etcd.yaml $(DIST_DIR)/kubectl-etcd_*
	@echo "release: $(DIST_DIR)" && ls -l $(DIST_DIR) $(DIST_DIR)/krew
