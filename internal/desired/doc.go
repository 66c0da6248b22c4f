// Package desired builds the Kubernetes objects and the etcd command line the operator wants to
// exist for an etcd cluster: member Pods and PVCs, the two Services, the PodDisruptionBudget, and
// the template hash that gates member restarts.
//
// Everything here is a pure function of its arguments: values in, values out, no clients, no
// clock, no randomness. Controllers gather the facts (the EtcdMember, the parent's cluster ID,
// digests of mounted CA bundles, the image repository) and hand them to these builders, so that
// every rendering decision can be table-tested and fuzzed without a cluster, and so that two
// operator replicas, or one operator before and after a crash, render byte-identical objects.
//
// The shape of a member Pod, and the reasons behind each choice, are written down in
// docs/design/pod-template.md.
package desired
