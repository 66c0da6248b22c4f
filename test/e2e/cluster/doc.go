//go:build e2e

// Package cluster holds the probe tests of the local cluster (hack/localcluster): they show
// that the cluster the e2e suite runs on has what the operator's promises depend on: a Pod on
// every node, Pod-to-Pod and Pod-to-Service traffic, per-Pod DNS through a headless Service, a
// bound PVC, a PDB refusing an eviction, a node lost and recovered, and a down that leaves
// nothing behind.
package cluster
