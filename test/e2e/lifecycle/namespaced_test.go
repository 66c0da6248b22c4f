//go:build e2e

package lifecycle

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// namespacedOperatorNamespace is where the test installs the namespace-scoped operator: not
// etcd-operator-system, whose ServiceAccount of the same name the default install binds to its
// ClusterRole.
const namespacedOperatorNamespace = "etcd-operator-namespaced"

// TestNamespacedInstall installs config/namespaced as docs/operator.md ("Namespace-scoped
// install") tells a user to: an overlay per part, the operator in its own namespace watching the
// test's namespace, Roles only. With the default operator stopped, the namespace-scoped one
// bootstraps a cluster, scales it 1 → 3 → 2 (learners added and promoted, a member removed and
// its EtcdMember deleted past the deletion guard, which lists the operator's ServiceAccount) and
// deletes it, and logs nothing at error level, where any request its Roles refuse would show.
//
// Not parallel: the default operator, which every other scenario needs, is stopped meanwhile (it
// watches every namespace and would manage the test's cluster too), and restored in a cleanup.
func TestNamespacedInstall(t *testing.T) {
	f := framework.NewTest(t, framework.Smoke)
	requireOperator(f)
	kubectl := kubectlPath(f)
	f.StopOperator()
	sa := "system:serviceaccount:" + namespacedOperatorNamespace + ":etcd-operator"
	allowInDeletionGuard(f, sa)
	installNamespaced(f, kubectl)
	requireNoClusterBinding(f, namespacedOperatorNamespace, "etcd-operator")

	const name = "nsinstall"
	start := time.Now()
	createCluster(f, newCluster(f, name, 1))
	ec := waitConverged(f, name, 1, bootstrapTimeout)
	f.Record("namespaced-bootstrap-1", since(start), "namespace-scoped operator: create → 1 voter Ready")
	checkMembership(f, ec, 1)
	for _, n := range []int32{3, 2} {
		start = time.Now()
		setReplicas(f, name, n)
		ec = waitConverged(f, name, int(n), scaleTimeout*time.Duration(n))
		f.Record(fmt.Sprintf("namespaced-scale-to-%d", n), since(start), "namespace-scoped operator: replicas → converged")
		checkMembership(f, ec, int(n))
	}
	deleteCluster(f, name)
	waitNothingLeft(f, name, false)
	requireNoErrorLogs(f, namespacedOperatorNamespace)
}

// installNamespaced renders config/namespaced through two overlays, as a user installing it
// elsewhere would write them, applies the result, and waits for the operator to be available.
// A cleanup deletes what was applied.
func installNamespaced(f *framework.Test, kubectl string) {
	f.T.Helper()
	dir := f.T.TempDir()
	// kustomize takes relative paths only: the overlays refer to a copy of config/ beside them.
	for _, part := range []string{"manager", "namespaced"} {
		if err := os.CopyFS(filepath.Join(dir, "config", part), os.DirFS(filepath.Join("..", "..", "..", "config", part))); err != nil {
			f.T.Fatal(err)
		}
	}
	overlays := map[string]string{
		"operator": fmt.Sprintf(`resources: [../../config/namespaced/operator]
namespace: %s
images: [{name: etcd-operator, newName: localhost/etcd-operator, newTag: dev}]
patches:
  - patch: |
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: etcd-operator}
      spec: {template: {spec: {containers: [{name: manager, env: [{name: ETCD_OPERATOR_WATCH_NAMESPACES, value: %s}]}]}}}
  - target: {kind: RoleBinding}
    patch: |
      - {op: replace, path: /subjects/0/namespace, value: %s}
`, namespacedOperatorNamespace, f.Namespace, namespacedOperatorNamespace),
		"watched": fmt.Sprintf(`resources: [../../config/namespaced/watched]
namespace: %s
patches:
  - target: {kind: RoleBinding}
    patch: |
      - {op: replace, path: /subjects/0/namespace, value: %s}
`, f.Namespace, namespacedOperatorNamespace),
	}
	var manifests bytes.Buffer
	for part, kustomization := range overlays {
		overlay := filepath.Join(dir, "overlays", part)
		if err := os.MkdirAll(overlay, 0o755); err != nil {
			f.T.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o600); err != nil {
			f.T.Fatal(err)
		}
		out, err := exec.CommandContext(f.Ctx, kubectl, "kustomize", overlay).Output()
		if err != nil {
			f.T.Fatalf("kubectl kustomize %s: %v", part, err)
		}
		manifests.WriteString("---\n")
		manifests.Write(out)
	}
	install := filepath.Join(dir, "install.yaml")
	if err := os.WriteFile(install, manifests.Bytes(), 0o600); err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(func() { uninstallNamespaced(f, kubectl, install) })
	kubectlRun(f, kubectl, "apply", "--server-side", "-f", install)
	if err := waitRolled(f.Ctx, f, namespacedOperatorNamespace, "etcd-operator"); err != nil {
		f.T.Fatal(err)
	}
}

// uninstallNamespaced deletes the namespace-scoped install and waits until its namespace is gone,
// so that a later run can install it again.
func uninstallNamespaced(f *framework.Test, kubectl, manifests string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", f.Kubeconfig, "delete", "--ignore-not-found", "--wait=true", "-f", manifests).CombinedOutput(); err != nil {
		f.T.Errorf("removing the namespace-scoped install: %v: %s", err, out)
	}
}

// kubectlRun runs kubectl against the local cluster and fails the test if it fails.
func kubectlRun(f *framework.Test, kubectl string, args ...string) {
	f.T.Helper()
	out, err := exec.CommandContext(f.Ctx, kubectl, append([]string{"--kubeconfig", f.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		f.T.Fatalf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// requireNoClusterBinding fails the test when any ClusterRoleBinding names the ServiceAccount:
// the install under test must work on Roles alone.
func requireNoClusterBinding(f *framework.Test, namespace, serviceAccount string) {
	f.T.Helper()
	bindings, err := f.Kube.RbacV1().ClusterRoleBindings().List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	for _, b := range bindings.Items {
		for _, s := range b.Subjects {
			if s.Kind == "ServiceAccount" && s.Namespace == namespace && s.Name == serviceAccount {
				f.T.Fatalf("ClusterRoleBinding %s binds %s/%s: the namespace-scoped install must hold Roles only", b.Name, namespace, serviceAccount)
			}
		}
	}
}

// requireNoErrorLogs fails the test when an operator Pod in namespace logged at error level.
func requireNoErrorLogs(f *framework.Test, namespace string) {
	f.T.Helper()
	pods, err := f.Kube.CoreV1().Pods(namespace).List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	for _, p := range pods.Items {
		raw, err := f.Kube.CoreV1().Pods(namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(f.Ctx)
		if err != nil {
			f.T.Fatalf("logs of %s: %v", p.Name, err)
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.Contains(line, `"level":"error"`) {
				f.T.Errorf("the namespace-scoped operator logged an error: %s", line)
			}
		}
	}
}

// allowInDeletionGuard adds identity to the deletion guard's operatorServiceAccounts, as
// config/admission says to for an operator running elsewhere, and restores the policy in a
// cleanup.
func allowInDeletionGuard(f *framework.Test, identity string) {
	f.T.Helper()
	const policy = "etcd-operator-etcdmember-deletion-guard"
	vap, err := f.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(f.Ctx, policy, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return // not installed: nothing guards deletions
	}
	if err != nil {
		f.T.Fatal(err)
	}
	for i, v := range vap.Spec.Variables {
		if v.Name != "operatorServiceAccounts" {
			continue
		}
		before := v.Expression
		after := strings.TrimSuffix(strings.TrimSpace(before), "]") + fmt.Sprintf(", '%s']", identity)
		setExpression := func(ctx context.Context, expr string) error {
			patch := fmt.Sprintf(`[{"op":"test","path":"/spec/variables/%d/name","value":%q},{"op":"replace","path":"/spec/variables/%d/expression","value":%q}]`,
				i, v.Name, i, expr)
			_, err := f.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Patch(ctx, policy, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
			if err != nil {
				return fmt.Errorf("patching %s: %w", policy, err)
			}
			return nil
		}
		if err := setExpression(f.Ctx, after); err != nil {
			f.T.Fatal(err)
		}
		f.T.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := setExpression(ctx, before); err != nil {
				f.T.Error(err)
			}
		})
		return
	}
	f.T.Fatalf("policy %s has no operatorServiceAccounts variable", policy)
}
