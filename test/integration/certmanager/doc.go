// Package certmanager holds the integration tests of the cert-manager Certificates the
// EtcdCluster controller creates (docs/tls.md, "cert-manager"): a real kube-apiserver (envtest)
// serving this project's CRDs and cert-manager's, read from the pinned module in the module
// cache, with the EtcdCluster controller running and no cert-manager controller (nothing issues
// the certificates; the tests look at the Certificate objects only). It has its own API server
// so that test/integration/etcdcluster keeps one without cert-manager's API.
package certmanager
