// Package legacyfixture builds, as Kubernetes objects, exactly what a release of the legacy
// operator (etcd.aenix.io/v1alpha1) leaves in a namespace: its CRDs, a legacy EtcdCluster, the
// StatefulSet with the legacy flags, labels, environment, probes and volume layout, the headless
// and client Services, the cluster-state ConfigMap, the PodDisruptionBudget and the TLS Secrets,
// plus a stand-in for the legacy controller's Deployment. etcd-migrate is tested against it,
// because the legacy operator itself cannot be installed here (docs/migration.md, "Testing").
//
// The layout mirrors the latest legacy releases, published from github.com/cozystack/etcd-operator
// (internal/legacy says which details those are). Build returns objects and talks to no
// cluster; Apply creates them through a controller-runtime client, for e2e tests. The Pods and
// PVCs are the StatefulSet controller's to create on a real cluster; ExpectedPods and
// ExpectedPVCs render them as it would, for unit tests of the planner.
//
// What the fixture cannot do without etcd: the legacy operator turns on etcd authentication
// through the client API once the cluster has formed. With Options.Auth the EtcdCluster says
// enableAuth: true, and a test that needs auth actually on in etcd must enable it itself.
package legacyfixture
