package health_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

const (
	// operatorUser is the operator's ServiceAccount as the API server names it.
	operatorUser = "system:serviceaccount:etcd-operator-system:etcd-operator"
	// humanUser is anyone else with RBAC permission to delete EtcdMembers.
	humanUser = "alice"
	// policyActivation bounds the wait for the API server to start enforcing a new policy
	// (its policy informer syncs asynchronously).
	policyActivation = 30 * time.Second
	repoRootRel      = "../../.."
)

// TestDeletionGuardPolicy applies config/admission to a real kube-apiserver (envtest) and checks
// the guard of docs/design/healing.md, "Foreign deletions": a person's DELETE of an EtcdMember is
// refused with instructions, allowed once the member carries allow-deletion, and always allowed to
// the operator.
func TestDeletionGuardPolicy(t *testing.T) {
	t.Parallel()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run with `make test`, which builds kube-apiserver and etcd from pinned sources and sets it")
	}
	ctx := t.Context()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, etcdv1alpha2.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(repoRootRel, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping kube-apiserver: %v", err)
		}
	})
	admin, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	human := userClient(t, env, scheme, envtest.User{Name: humanUser, Groups: []string{"system:authenticated"}})
	operator := userClient(t, env, scheme, envtest.User{Name: operatorUser, Groups: []string{"system:serviceaccounts", "system:authenticated"}})
	grantMemberDeletion(ctx, t, admin, humanUser, operatorUser)
	applyAdmissionConfig(ctx, t, admin)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "guard-"}}
	if err := admin.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	refusal := waitForEnforcement(ctx, t, admin, human, ns.Name)

	t.Run("a person's delete is refused with instructions", func(t *testing.T) {
		t.Parallel()
		t.Logf("refusal: %v", refusal)
		if !apierrors.IsForbidden(refusal) && !apierrors.IsInvalid(refusal) {
			t.Fatalf("refusal is neither Forbidden nor Invalid: %v", refusal)
		}
		for _, s := range []string{"is managed by etcd-operator", "can lose data",
			"etcd-operator.cozystack.io/allow-deletion=true", "etcd-operator.cozystack.io/replace=", "kubectl annotate etcdmember -n " + ns.Name} {
			if !strings.Contains(refusal.Error(), s) {
				t.Errorf("refusal %q does not contain %q", refusal.Error(), s)
			}
		}
	})
	t.Run("a person's delete of an allow-deletion member is allowed", func(t *testing.T) {
		t.Parallel()
		m := createMember(ctx, t, admin, ns.Name, map[string]string{etcdv1alpha2.AnnotationAllowDeletion: "true"})
		if err := human.Delete(ctx, m); err != nil {
			t.Fatalf("delete with allow-deletion refused: %v", err)
		}
	})
	t.Run("allow-deletion must be exactly true", func(t *testing.T) {
		t.Parallel()
		m := createMember(ctx, t, admin, ns.Name, map[string]string{etcdv1alpha2.AnnotationAllowDeletion: "yes"})
		if err := human.Delete(ctx, m); err == nil {
			t.Fatal("delete with allow-deletion=yes was allowed")
		}
	})
	t.Run("the operator's delete is allowed", func(t *testing.T) {
		t.Parallel()
		m := createMember(ctx, t, admin, ns.Name, nil)
		if err := operator.Delete(ctx, m); err != nil {
			t.Fatalf("operator's delete refused: %v", err)
		}
	})
	t.Run("a person's delete of every member at once is refused", func(t *testing.T) {
		t.Parallel()
		// `kubectl delete etcdmember --all` is a deletecollection, admitted item by item.
		other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "guard-all-"}}
		if err := admin.Create(ctx, other); err != nil {
			t.Fatal(err)
		}
		kept := createMember(ctx, t, admin, other.Name, nil)
		if err := human.DeleteAllOf(ctx, &etcdv1alpha2.EtcdMember{}, client.InNamespace(other.Name)); err == nil {
			t.Fatal("deletecollection of guarded members was allowed")
		}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(kept), &etcdv1alpha2.EtcdMember{}); err != nil {
			t.Fatalf("member gone after a refused deletecollection: %v", err)
		}
	})
}

func userClient(t *testing.T, env *envtest.Environment, scheme *runtime.Scheme, u envtest.User) client.Client {
	t.Helper()
	au, err := env.AddUser(u, nil)
	if err != nil {
		t.Fatalf("adding user %s: %v", u.Name, err)
	}
	c, err := client.New(au.Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// grantMemberDeletion gives users RBAC permission to delete EtcdMembers, so that only the policy
// stands between them and a deletion.
func grantMemberDeletion(ctx context.Context, t *testing.T, admin client.Client, users ...string) {
	t.Helper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "etcdmember-deleter"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{etcdv1alpha2.GroupVersion.Group}, Resources: []string{"etcdmembers"},
			Verbs: []string{"get", "list", "watch", "delete", "deletecollection"},
		}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "etcdmember-deleter"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
	}
	for _, u := range users {
		binding.Subjects = append(binding.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: u})
	}
	for _, o := range []client.Object{role, binding} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}

// applyAdmissionConfig creates every object of config/admission's manifests.
func applyAdmissionConfig(ctx context.Context, t *testing.T, admin client.Client) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRootRel, "config", "admission", "etcdmember-deletion-guard.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var created int
	for {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		var obj client.Object
		switch meta.Kind {
		case "ValidatingAdmissionPolicy":
			obj = &admissionregistrationv1.ValidatingAdmissionPolicy{}
		case "ValidatingAdmissionPolicyBinding":
			obj = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		default:
			continue
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("decoding %s: %v", meta.Kind, err)
		}
		if err := admin.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s: %v", meta.Kind, err)
		}
		created++
	}
	if created != 2 {
		t.Fatalf("config/admission holds %d policy objects, want a policy and a binding", created)
	}
}

// waitForEnforcement deletes probe members as a person until the policy refuses one, and
// returns that refusal. A probe deleted before the policy was active is simply replaced.
func waitForEnforcement(ctx context.Context, t *testing.T, admin, human client.Client, ns string) error {
	t.Helper()
	deadline := time.Now().Add(policyActivation)
	for {
		probe := createMember(ctx, t, admin, ns, nil)
		err := human.Delete(ctx, probe)
		if err != nil {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy was not enforced within %s", policyActivation)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func createMember(ctx context.Context, t *testing.T, admin client.Client, ns string, annotations map[string]string) *etcdv1alpha2.EtcdMember {
	t.Helper()
	m := &etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "guarded-", Annotations: annotations},
		Spec: etcdv1alpha2.EtcdMemberSpec{
			ClusterName: "guarded", Version: "3.6.16", ClusterToken: "guarded-token",
			InitialCluster: "m0=http://m0.guarded." + ns + ".svc:2380",
		},
	}
	if err := admin.Create(ctx, m); err != nil {
		t.Fatalf("creating EtcdMember: %v", err)
	}
	return m
}
