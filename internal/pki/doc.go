// Package pki issues, parses and judges X.509 certificates for etcd clusters: the
// operator-managed CAs and the leaf certificates they sign, the renewal decision, the trust
// bundle, the check of certificates users bring themselves, and the plan of which managed
// Secret to write, the steps of a CA rotation and of a move to managed TLS included, with what
// each write leaves in its Secret (docs/tls.md). Apart from drawing keys and serial numbers from crypto/rand, it
// is pure: time comes in as a value, Secrets come in as their data, and nothing here reads or
// writes the API.
package pki
