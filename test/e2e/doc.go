// Package e2e holds the end-to-end tests that run against the project's local Kubernetes
// cluster. Every test file carries the build tag e2e; run them with `make e2e` (smoke set) or
// `make e2e-full`. See docs/testing-e2e.md and package framework.
package e2e
