// Package promserver runs a real Prometheus server for tests: the server binary built from the
// pinned Prometheus module (`go run ./hack/binaries prometheus`; PROMETHEUS_VERSION in
// hack/versions.env), scraping targets that the test writes to file_sd files, evaluating rule
// files, and answering the HTTP API (instant and range queries, rules, targets).
//
// The binary is found through PROMETHEUS_BIN_DIR, the folder `go run ./hack/binaries
// prometheus` prints; the e2e make targets set it. Tests skip with the reason when it is unset
// (and fail when CI=true); a set but wrong PROMETHEUS_BIN_DIR is a failure. By hand:
//
//	PROMETHEUS_BIN_DIR=$(go run ./hack/binaries prometheus) go test ./test/utils/promserver/
//
// The server is built without Kubernetes service discovery (build tag remove_all_sd): a test
// lists the Pods itself and writes them as file_sd target groups with the labels a
// PodMonitor's or ServiceMonitor's relabelling would give (docs/monitoring.md, "The e2e
// Prometheus"). It runs in its own process group with a parent-death signal, so a crashed test
// binary does not leave it running, and is killed when the test ends; its data is thrown away.
package promserver
