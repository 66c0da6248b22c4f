package operator_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

const (
	// buildTimeout bounds `go build` of the operator on a loaded CI machine with a warm module cache.
	buildTimeout = 5 * time.Minute
	// setupTimeout bounds the API objects TestMain creates.
	setupTimeout = time.Minute

	// operatorPackage is built from source by the tests, so that they exercise main.go too.
	operatorPackage = "github.com/etcd-operator/etcd-operator/cmd/etcd-operator"
	// operatorUser is the identity the operator runs as; it is bound to the generated ClusterRole only.
	operatorUser = "etcd-operator"
	// namespacedUser is the identity of the namespace-scoped install's operator: bound to the
	// Roles of config/namespaced only, in the namespaces each test grants them (grantRole).
	namespacedUser = "etcd-operator-namespaced"
)

// Paths from this package to the generated manifests the operator is deployed with.
var (
	crdDirectory = filepath.Join("..", "..", "..", "config", "crd", "bases")
	roleFile     = filepath.Join("..", "..", "..", "config", "rbac", "role.yaml")
)

// State shared by the tests of this package, set up once by TestMain. Each test works in its own
// namespace, so they run in parallel against one API server.
var (
	// binaryDir holds the operator binary, built on first use.
	binaryDir string
	// admin is a client with every permission, for arranging and checking objects.
	admin client.Client
	// operatorKubeconfig is a kubeconfig file for operatorUser.
	operatorKubeconfig string
	// namespacedKubeconfig is a kubeconfig file for namespacedUser.
	namespacedKubeconfig string
)

// buildOnce builds the operator at most once per test binary: linking it takes tens of seconds.
var buildOnce = sync.OnceValues(func() (string, error) {
	path := filepath.Join(binaryDir, "etcd-operator")
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	// `go test` puts $GOROOT/bin first in PATH, so this is the toolchain running the tests.
	out, err := exec.CommandContext(ctx, "go", "build", "-o", path, operatorPackage).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", operatorPackage, err, out)
	}
	return path, nil
})

// operatorBinary returns the path of the built operator, failing the test if it does not build.
func operatorBinary(t *testing.T) string {
	t.Helper()
	path, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMain(m *testing.M) {
	if os.Getenv(runInProcessEnv) == "1" {
		os.Exit(runInProcess())
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	// Fail rather than skip (TESTING.md): a green run must never mean that nothing ran.
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: these tests need a real kube-apiserver and etcd; "+
			"run them with `make test`, which builds both from pinned sources and sets it")
		return 1
	}
	dir, err := os.MkdirTemp("", "etcd-operator-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating a temporary folder:", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	binaryDir = dir

	env := &envtest.Environment{
		// The CRDs are installed so that controllers, once registered, find their kinds.
		CRDDirectoryPaths:     []string{crdDirectory},
		ErrorIfCRDPathMissing: true,
	}
	// As on the local cluster (docs/local-cluster.md): an ownerReference with blockOwnerDeletion
	// is admitted only from a user who may update the owner's finalizers, so the generated
	// role must grant that (docs/operator.md, "Permissions").
	env.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", "OwnerReferencesPermissionEnforcement")
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting kube-apiserver and etcd:", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping kube-apiserver and etcd:", err)
		}
	}()
	// Kubernetes' kinds and the operator's, so that tests can arrange and read both.
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), etcdv1alpha2.AddToScheme(scheme)); err != nil {
		fmt.Fprintln(os.Stderr, "building the scheme:", err)
		return 1
	}
	if admin, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, "creating the admin client:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if err := grantGeneratedRole(ctx, admin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if operatorKubeconfig, err = writeKubeconfig(env, operatorUser, filepath.Join(dir, "kubeconfig")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if namespacedKubeconfig, err = writeKubeconfig(env, namespacedUser, filepath.Join(dir, "kubeconfig-namespaced")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// grantGeneratedRole creates the ClusterRole generated from the kubebuilder markers and binds it to
// the operator's user, so that a test fails if the markers miss a permission the operator needs.
// The generated namespaced Role (leader election) is kept in leaseRole: each test grants it in
// the namespace its operator keeps its Lease in (grantLeaseRole).
func grantGeneratedRole(ctx context.Context, c client.Client) error {
	data, err := os.ReadFile(roleFile)
	if err != nil {
		return fmt.Errorf("reading the generated RBAC (run `make manifests`): %w", err)
	}
	docs := strings.Split(string(data), "\n---\n")
	if len(docs) != 2 {
		return fmt.Errorf("%s holds %d objects, want the ClusterRole and the leader-election Role", roleFile, len(docs))
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &role); err != nil {
		return fmt.Errorf("parsing %s: %w", roleFile, err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &leaseRole); err != nil {
		return fmt.Errorf("parsing the Role of %s: %w", roleFile, err)
	}
	if leaseRole.Kind != "Role" {
		return fmt.Errorf("the second object of %s is a %s, want the leader-election Role", roleFile, leaseRole.Kind)
	}
	for _, r := range role.Rules {
		if slices.Contains(r.Resources, "leases") {
			return fmt.Errorf("the ClusterRole grants Leases cluster-wide (%+v): leader election needs them in one namespace only", r)
		}
	}
	if err := c.Create(ctx, &role); err != nil {
		return fmt.Errorf("creating ClusterRole %s: %w", role.Name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: operatorUser}},
	}
	if err := c.Create(ctx, binding); err != nil {
		return fmt.Errorf("binding ClusterRole %s to %s: %w", role.Name, operatorUser, err)
	}
	return nil
}

// leaseRole is the generated leader-election Role, as read by grantGeneratedRole.
var leaseRole rbacv1.Role

// grantLeaseRole creates the generated leader-election Role in namespace and binds it to the
// operator's user, as config/rbac does in the operator's namespace.
func grantLeaseRole(ctx context.Context, c client.Client, namespace string) error {
	return grantRole(ctx, c, &leaseRole, namespace, operatorUser)
}

// grantRole creates role in namespace and binds it to user.
func grantRole(ctx context.Context, c client.Client, role *rbacv1.Role, namespace, user string) error {
	role = role.DeepCopy()
	role.Namespace = namespace
	role.Name += "-" + user
	if err := c.Create(ctx, role); err != nil {
		return fmt.Errorf("creating Role %s in %s: %w", role.Name, namespace, err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := c.Create(ctx, binding); err != nil {
		return fmt.Errorf("binding Role %s in %s to %s: %w", role.Name, namespace, user, err)
	}
	return nil
}

// writeKubeconfig writes a kubeconfig file that authenticates as name with a client
// certificate, as a service account token would in a cluster.
func writeKubeconfig(env *envtest.Environment, name, path string) (string, error) {
	user, err := env.AddUser(envtest.User{Name: name}, nil)
	if err != nil {
		return "", fmt.Errorf("adding user %s: %w", name, err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("rendering the kubeconfig of %s: %w", name, err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return path, nil
}
