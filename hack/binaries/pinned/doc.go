// Package pinned builds the third-party binaries this project runs in tests (Kubernetes
// components, etcd, CoreDNS, cert-manager's controllers, the SeaweedFS S3 server, helm, promtool) from the Go
// module proxy at the versions pinned in hack/versions.env (cert-manager: in
// hack/certmanager/go.mod; SeaweedFS: in hack/s3server/go.mod), and caches them by version
// outside the work tree.
//
// The machine has no release downloads and no registry, so every binary is compiled from its
// module. Each build happens in a generated "tools module" under the cache: a go.mod that
// requires the upstream module at the pinned version, so `go build` can compile the upstream
// main packages even when they carry replace directives that `go install pkg@version` refuses.
// cert-manager is the exception: the module of its command is not served, so its controllers
// are assembled by a main of this repository (hack/certmanager, its own module), built in place.
// The S3 server is built the same way (hack/s3server), as a main with test defaults around
// SeaweedFS's `weed server` command.
//
// A binary counts as cached only when a stamp written after its successful build matches the
// recipe (version, Go toolchain, flags) that would build it now, so an interrupted build or a
// toolchain change leads to a rebuild. Builds take an exclusive file lock on the cache, so
// concurrent callers (several `make test` runs, the local cluster tool) build once and share.
package pinned
