// Package legacy describes what the legacy operator (API group etcd.aenix.io, version v1alpha1)
// leaves in a namespace: its custom resources as Go types that can be decoded from unstructured
// objects, and the naming, labelling and command-line conventions of the StatefulSet it renders.
// etcd-migrate reads these to adopt the clusters in place (docs/migration.md).
//
// The layout mirrors the latest legacy releases, those published from
// github.com/cozystack/etcd-operator (the continuation of aenix-io/etcd-operator): the six-Secret
// TLS layout with serverTrustedCASecret, security.enableAuth, bootstrap.restore, and the
// EtcdBackup and EtcdBackupSchedule kinds. Older aenix-io releases lack the last three and
// differ in details such as the client TLS flags; the tool always reads the live objects, so
// these types are only the shape it expects, never a source of defaults for a live cluster.
//
// The legacy CRDs are not registered in any scheme of this project: the types here are decoded
// with runtime.DefaultUnstructuredConverter from what a dynamic client returns, so that reading
// them never requires the legacy operator's Go module.
package legacy
