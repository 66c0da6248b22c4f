// Package s3server runs a real S3-compatible object store for tests: SeaweedFS's master, volume
// server, filer and S3 gateway in one process (hack/s3server, built from the SeaweedFS module
// pinned in hack/s3server/go.mod), on free loopback ports, with its data in a test's temporary
// folder and one identity whose access key and secret every request must be signed with
// (signature v4): a request signed with another secret gets 403.
//
// The binary is found through S3SERVER_BIN_DIR, the folder that `go run ./hack/binaries
// s3server` prints; `make test` sets it. Tests skip with the reason when it is unset, which
// happens only outside `make test` (and fail instead when CI=true); a set but wrong
// S3SERVER_BIN_DIR is a failure. By hand:
//
//	S3SERVER_BIN_DIR=$(go run ./hack/binaries s3server) go test ./test/utils/s3server/
//
// The server is started in its own process group with a parent-death signal, so a crashed test
// binary does not leave it running, and is killed (SIGKILL: its data is thrown away) when the
// test ends. See docs/local-cluster.md, "S3 server".
package s3server
