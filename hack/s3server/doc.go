// Command s3server is the S3-compatible object store that tests run: SeaweedFS's `weed server`
// (Apache-2.0) with a master, a volume server, a filer and the S3 gateway in one process, built
// from the SeaweedFS module pinned in this folder's go.mod (the one place its version is
// pinned). hack/binaries builds it ("go run ./hack/binaries s3server") and the test helper
// test/utils/s3server starts it (docs/local-cluster.md, "S3 server").
//
// It runs `weed server -s3` with defaults that make it a quiet, local test server, then the
// arguments it was given, which may override them (the last value of a flag wins):
//
//	-ip=127.0.0.1 -ip.bind=127.0.0.1   loopback only
//	-s3 -s3.iam=false                   the S3 gateway (and so the filer), no embedded IAM API
//	-s3.autoCreateBucket=false          a PUT to a missing bucket is NoSuchBucket, as on AWS
//	-s3.port.iceberg=0 -s3.port.lance=0 no Iceberg or Lance catalog listeners
//	-master.telemetry=false             no usage report to SeaweedFS's telemetry server
//	-volume.preStopSeconds=0            no 10 s pause of the volume server on SIGTERM
//
// Logs go to stderr (glog's -logtostderr), never to files under /tmp. The caller gives the
// ports (each HTTP port and, since the default gRPC port is the HTTP port + 10000, each gRPC
// port), the data folder (-dir) and the identities with their keys (-s3.config, a JSON file:
// see test/utils/s3server). SeaweedFS's other commands are linked in (its command package
// holds them all) but cannot be reached.
package main
