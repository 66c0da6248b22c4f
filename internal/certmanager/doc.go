// Package certmanager renders the cert-manager Certificates an EtcdCluster's spec.tls asks for
// (docs/tls.md, "cert-manager"): <cluster>-server, <cluster>-peer and <cluster>-operator-client,
// each writing the Secret of its name plus "-tls".
//
// It is a pure function of the cluster and the cluster domain, like package desired. The
// Certificates are unstructured objects of cert-manager.io/v1, so the operator needs no
// cert-manager Go module: it only creates these objects, once, and never reads them back beyond
// their existence.
package certmanager
