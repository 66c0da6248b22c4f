// Package phase holds etcd-migrate's phases before and around the adoption: the legacy
// controller gate, discovery of legacy objects, inspection of each cluster's objects and etcd,
// turning auth off and the backup Job (docs/migration.md, "Phases"). Each phase is a plain
// function over narrow interfaces: a Kubernetes client, an etcd Dialer, a clock.
package phase
