// Package monitoring checks what the operator ships for monitoring against what it and etcd
// really export (docs/monitoring.md):
//
//   - the alerts (config/prometheus): `promtool check rules` and `promtool test rules`, with a
//     firing and a non-firing case for every alert, a runbook section for each, and the plain rule
//     file equal to the PrometheusRule it is generated from;
//   - the Grafana dashboard (config/grafana): every panel's query parses (promtool) and names only
//     metrics the operator registers (read from its registry in this process) or etcd metrics
//     listed in etcdMetricNames, which a real etcd of every pinned minor is checked to export;
//   - the Events listed in docs/events.md, against the reasons the controllers' code uses.
//
// The readers of the dashboard and the rule file (files.go) are exported for the e2e monitoring
// test, which runs the same queries and rules on a real Prometheus (docs/monitoring.md, "The e2e
// Prometheus").
//
// promtool is found through PROMTOOL_BIN_DIR, the folder `go run ./hack/binaries promtool`
// prints; `make test` sets it. Without it the promtool checks skip, saying so (and fail when
// CI=true, so that a green CI never means they were skipped). By hand:
//
//	PROMTOOL_BIN_DIR=$(go run ./hack/binaries promtool) go test ./test/monitoring/
package monitoring
