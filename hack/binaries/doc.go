// Command binaries builds, from the Go module proxy, the binaries that tests and the local
// cluster run, at the versions pinned in hack/versions.env, and caches them outside the work
// tree in $ETCD_OPERATOR_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/etcd-operator).
//
// Usage, from anywhere in the repository:
//
//	go run ./hack/binaries envtest      # etcd, kube-apiserver, kubectl in one folder (KUBEBUILDER_ASSETS)
//	go run ./hack/binaries kubernetes   # the six Kubernetes commands
//	go run ./hack/binaries etcd [x.y.z ...] # etcd, etcdctl, etcdutl; default: every pinned minor
//	go run ./hack/binaries coredns      # CoreDNS
//	go run ./hack/binaries certmanager  # cert-manager's controllers (hack/certmanager, pinned in its go.mod)
//	go run ./hack/binaries certmanager-crds # cert-manager's CRD folder in the module cache
//	go run ./hack/binaries s3server     # the S3 server of tests (SeaweedFS; hack/s3server, pinned in its go.mod)
//	go run ./hack/binaries helm         # the helm CLI that checks charts/etcd-operator
//	go run ./hack/binaries promtool     # Prometheus's promtool, for the alerting rules' tests
//	go run ./hack/binaries prometheus   # the Prometheus server of the e2e monitoring test (same release as promtool)
//	go run ./hack/binaries all          # kubernetes, every pinned etcd, coredns, certmanager, s3server, helm, promtool, prometheus
//
// Each subcommand prints only absolute folder paths on stdout, one per line, so it composes in
// shell: KUBEBUILDER_ASSETS="$(go run ./hack/binaries envtest)". Progress and timings go to
// stderr. Cached binaries are reused; the first build takes minutes. The logic lives in package
// pinned.
package main
