// Package translate maps one discovered legacy cluster (its legacy spec, live objects and the
// facts etcd-migrate inspected) onto this project's API: the EtcdCluster to create, the Secrets
// to generate, the members to adopt, and every warning and refusal, each with a stable code
// (docs/migration.md, "Translation" and "Refusals").
//
// It is a pure function of its Input: no clients, no clock, no randomness. Secret material
// never enters it; it sees key names, CA certificates and certificate names only, and says how
// a generated Secret is assembled from existing ones instead of holding its bytes.
package translate
