// Package lifecycle holds the operator's lifecycle e2e scenarios (build tag e2e): bootstrap of
// 1, 3 and 5 members, scaling 1→3→5→3→1 under write traffic, pause and resume, scaling through
// the /scale subresource, the docs/api.md example, eviction refused below quorum, deletion with
// nothing leaked, operator crashes at step boundaries, and member failures healed under write
// traffic (heal_*_test.go: lost Memory Pods, wiped or corrupted data dirs, quorum loss with the
// data intact, the operator down, held EtcdMember deletions and re-adoption, crash loops, a
// lost node). They run against the local cluster
// with the operator deployed (`make deploy`); docs/e2e-lifecycle.md lists what each asserts and
// the durations measured.
package lifecycle
