// Package framework is the e2e test framework: it connects to the project's local Kubernetes
// cluster (see hack/ and `make cluster-up`), gives each test its own namespace, waits with
// explicit timeouts, injects faults (Pod deletion, eviction through the Eviction API, operator
// scale-down; node, container and data-dir faults through the cluster tool), records scenario
// durations in the timing report, and on failure dumps events, Pod logs, operator logs and
// object YAML into artifacts/<test>/.
//
// Files that talk to the cluster carry the build tag e2e, so `make test` compiles and runs only
// the pure helpers here (configuration, label filtering, polling, naming, count ceilings). e2e
// tests run on the host: they reach etcd members by Pod IP (package etcdconn) and never resolve
// cluster names through the host's resolver.
//
// Usage, in a package with the e2e tag:
//
//	func TestMain(m *testing.M) { os.Exit(framework.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		f := framework.NewTest(t, framework.Smoke)
//		// f.Namespace is fresh; f.Ctx ends with the test.
//	}
package framework
