// Command certmanager is cert-manager's controller for the local test cluster, assembled here
// from cert-manager's own controller packages because the module of its upstream command
// (github.com/cert-manager/cert-manager/cmd/controller) is not served by the Go module proxy,
// while the root module github.com/cert-manager/cert-manager, which holds every controller, is.
//
// It runs only what issuing certificates from SelfSigned and CA Issuers and ClusterIssuers
// needs: the certificates-* controllers (trigger, key manager, request manager, issuing,
// readiness, revision manager), the CertificateRequest approver and the CA and SelfSigned
// CertificateRequest signers, and the issuers and clusterissuers controllers that mark those
// issuers Ready. No ACME, Vault or Venafi, no webhook, no cainjector, no leader election (one
// replica). Its version is pinned once, in this folder's go.mod; hack/binaries builds it and
// the local cluster turns it into an image (docs/local-cluster.md, "cert-manager").
//
// Flags:
//
//	--cluster-resource-namespace  where ClusterIssuers' CA Secrets live (default $POD_NAMESPACE, else cert-manager)
//	--kubeconfig                  a kubeconfig; empty means in-cluster
//	--workers                     workers per controller (default 2)
//	-v                            klog verbosity
package main
