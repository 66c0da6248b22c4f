//go:build e2e

package framework

import (
	"github.com/etcd-operator/etcd-operator/hack/localcluster/cluster"
	"github.com/etcd-operator/etcd-operator/test/utils/s3server"
)

// S3 starts a real S3 server (test/utils/s3server) for this test, bound to the local cluster's
// host address so that Pods reach it (docs/local-cluster.md, "S3 server"), and kills it when the
// test ends. It skips the test when S3SERVER_BIN_DIR is unset outside CI; the e2e make targets
// set it.
func (f *Test) S3() *s3server.Server {
	f.T.Helper()
	return s3server.StartForTest(f.T, s3server.Options{Host: cluster.ControlPlaneIP})
}
