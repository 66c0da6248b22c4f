// Package etcdcluster holds the integration tests of the EtcdCluster controller: it runs the EtcdCluster controller against a real kube-apiserver
// (envtest) with a rule-enforcing etcd fake behind the real etcdclient.Pool. There is no kubelet,
// scheduler or member controller in envtest, so the tests play their part: fakeKubelet creates a
// Running, Ready Pod and a PVC for every member with an initialCluster, starts the member's etcd
// process in the fake, and writes the member status fields the EtcdMember controller owns.
package etcdcluster
