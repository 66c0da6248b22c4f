package cluster

import (
	"path/filepath"

	"github.com/etcd-operator/etcd-operator/hack/binaries/pinned"
)

// CertManagerImageRepository is the repository of the image of cert-manager's controllers
// (hack/certmanager) that up builds; the tag is the pinned cert-manager version.
const CertManagerImageRepository = "localhost/cert-manager-controller"

// CertManagerImage is the image of cert-manager release version (x.y.z), as up builds it. Tests
// install it on demand (test/e2e/framework, InstallCertManager); up only imports it.
func CertManagerImage(version string) string { return CertManagerImageRepository + ":v" + version }

// certManagerImage lays out the controller binary alone, run as a non-root user like upstream's
// distroless image.
func (c *Cluster) certManagerImage() imageSpec {
	return imageSpec{
		ref:        CertManagerImage(c.certManagerVersion),
		files:      []imageFile{{path: "/" + pinned.CertManagerBinary, src: filepath.Join(c.certManagerDir, pinned.CertManagerBinary), mode: 0o755}},
		entrypoint: []string{"/" + pinned.CertManagerBinary},
		user:       "65532:65532",
	}
}
