// Package plan turns one translated legacy cluster into its adoption plan: the exact objects
// etcd-migrate creates, patches and deletes, in the order of docs/migration.md ("Adoption
// steps"), with the translation's warnings, refusals and security summary; and renders plans
// as text for people and as versioned JSON (Schema) for machines.
//
// It is pure: the executors that carry a plan out, and the inspection that feeds it, live
// elsewhere. A plan holds no Secret material; generated Secrets are described by where their
// keys come from.
package plan
