//go:build e2e

package certmanager

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// issueTimeout bounds the wait for one Certificate's Secret.
const issueTimeout = 2 * time.Minute

var (
	certificates   = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}
	issuers        = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "issuers"}
	clusterIssuers = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "clusterissuers"}
)

// TestCertManagerIssuesCAChain installs cert-manager and issues the chain a cluster's
// certificates come from: a SelfSigned ClusterIssuer signs a CA Certificate, a CA Issuer serves
// that CA, and it signs a leaf. The leaf's Secret must hold tls.crt, tls.key and ca.crt, and
// the leaf must verify against that ca.crt.
func TestCertManagerIssuesCAChain(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke, framework.Security)
	start := time.Now()
	if err := f.InstallCertManager(f.Ctx); err != nil {
		t.Fatal(err)
	}
	f.Record("cert-manager-install", time.Since(start), "CRDs and controller Available (idempotent: less when installed)")

	start = time.Now()
	caIssuers(t, f, "ca")
	create(t, f, certificates, f.Namespace, certificate("leaf", "leaf-tls", map[string]any{
		"dnsNames":  []any{"leaf." + f.Namespace + ".svc"},
		"usages":    []any{"digital signature", "key encipherment", "server auth", "client auth"},
		"issuerRef": map[string]any{"kind": "Issuer", "name": "ca"},
	}))
	data := waitForSecret(t, f, "leaf-tls")
	f.Record("cert-manager-issue-chain", time.Since(start), "SelfSigned ClusterIssuer → CA Certificate → CA Issuer → leaf Secret")
	if err := verifyLeaf(data["tls.crt"], data["ca.crt"], "leaf."+f.Namespace+".svc"); err != nil {
		t.Fatal(err)
	}
}

// caIssuers creates, in the test namespace, a CA Issuer for each of names, each with its own CA
// that cert-manager issues from a SelfSigned ClusterIssuer (cluster-scoped, so named after the
// test namespace and deleted when the test ends): the chain a cluster's certificates come from.
func caIssuers(t *testing.T, f *framework.Test, names ...string) {
	t.Helper()
	selfSigned := "selfsigned-" + f.Namespace
	create(t, f, clusterIssuers, "", map[string]any{"kind": "ClusterIssuer", "metadata": map[string]any{"name": selfSigned},
		"spec": map[string]any{"selfSigned": map[string]any{}}})
	t.Cleanup(func() {
		err := f.Dynamic.Resource(clusterIssuers).Delete(context.WithoutCancel(f.Ctx), selfSigned, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting ClusterIssuer %s: %v", selfSigned, err)
		}
	})
	for _, name := range names {
		create(t, f, certificates, f.Namespace, certificate(name, name+"-tls", map[string]any{
			"isCA": true, "commonName": "e2e CA " + name,
			"issuerRef": map[string]any{"kind": "ClusterIssuer", "name": selfSigned, "group": "cert-manager.io"},
		}))
		create(t, f, issuers, f.Namespace, map[string]any{"kind": "Issuer", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"ca": map[string]any{"secretName": name + "-tls"}}})
	}
}

// certificate renders a cert-manager Certificate named name into secretName with spec.
func certificate(name, secretName string, spec map[string]any) map[string]any {
	spec["secretName"] = secretName
	spec["privateKey"] = map[string]any{"algorithm": "RSA", "size": int64(2048)}
	return map[string]any{"kind": "Certificate", "metadata": map[string]any{"name": name}, "spec": spec}
}

// create creates the cert-manager object obj (its kind and metadata filled in) through the
// dynamic client.
func create(t *testing.T, f *framework.Test, gvr schema.GroupVersionResource, namespace string, obj map[string]any) {
	t.Helper()
	obj["apiVersion"] = gvr.GroupVersion().String()
	u := &unstructured.Unstructured{Object: obj}
	if _, err := f.Dynamic.Resource(gvr).Namespace(namespace).Create(f.Ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// waitForSecret waits until Secret name of the test namespace holds tls.crt, tls.key and ca.crt,
// and returns its data.
func waitForSecret(t *testing.T, f *framework.Test, name string) map[string][]byte {
	t.Helper()
	var data map[string][]byte
	err := f.Poll("Secret "+name+" with tls.crt, tls.key, ca.crt", issueTimeout, func(ctx context.Context) (bool, string, error) {
		s, err := f.Kube.CoreV1().Secrets(f.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
			if len(s.Data[k]) == 0 {
				return false, "no " + k, nil
			}
		}
		data = s.Data
		return true, "complete", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// verifyLeaf checks that the PEM certificate leaf chains to the PEM CA for dnsName, as a server.
func verifyLeaf(leafPEM, caPEM []byte, dnsName string) error {
	block, _ := pem.Decode(leafPEM)
	if block == nil {
		return errors.New("tls.crt holds no PEM block")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return fmt.Errorf("parsing tls.crt: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return errors.New("ca.crt holds no certificate")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: dnsName, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Errorf("the leaf does not verify against ca.crt: %w", err)
	}
	return nil
}
