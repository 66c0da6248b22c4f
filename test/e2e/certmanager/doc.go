// Package certmanager holds the e2e tests of cert-manager in the local cluster (build tag e2e):
// that the controllers of hack/certmanager, installed on demand by the framework
// (InstallCertManager), issue a CA chain from a SelfSigned ClusterIssuer and a CA Issuer, and
// what the operator does with the Certificates spec.tls asks cert-manager for. See
// docs/local-cluster.md, "cert-manager", and docs/tls.md, "cert-manager".
package certmanager
