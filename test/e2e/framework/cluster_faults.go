//go:build e2e

package framework

// clusterFaults returns the fault injectors of the local cluster tool. The tool does not expose
// an API for them yet, so every part is nil and tests that need one skip (RequireNodeFaults
// and friends). Wire the tool's implementations here once it exists.
func clusterFaults() ClusterFaults {
	return ClusterFaults{}
}
