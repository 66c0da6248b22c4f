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
// promtool is found through PROMTOOL_BIN_DIR, the folder `go run ./hack/binaries promtool`
// prints; `make test` sets it. Without it the promtool checks skip, saying so (and fail when
// CI=true, so that a green CI never means they were skipped). By hand:
//
//	PROMTOOL_BIN_DIR=$(go run ./hack/binaries promtool) go test ./test/monitoring/
package monitoring
