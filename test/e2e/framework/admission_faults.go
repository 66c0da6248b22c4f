//go:build e2e

package framework

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// admissionTimeout bounds waiting for the API server to enforce a new admission policy (its
// policy informer picks it up within a second or two), and the cleanup's deletes.
const admissionTimeout = time.Minute

// DenyPodCreates makes the API server refuse to create Pods with these names in the test
// namespace, through a ValidatingAdmissionPolicy and its binding (cluster-scoped, named after
// the namespace, bound to it alone). A controller that recreates a deleted Pod then gets a 403
// on every attempt, so the Pod stays down for as long as the test needs, however fast the
// controller retries; other Pods and other namespaces are not affected. It returns once the
// API server enforces the policy (a dry-run create of the first name is refused), and returns
// the function that lifts it; a cleanup lifts it too.
//
// A ResourceQuota on the Pod count was tried first and does not hold: its usage is counted
// asynchronously, and Pods were admitted within a second of their predecessors' deletion.
func (f *Test) DenyPodCreates(names ...string) (lift func()) {
	f.T.Helper()
	if len(names) == 0 {
		f.T.Fatal("DenyPodCreates: no Pod names")
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	name := "e2e-deny-pods-" + f.Namespace
	policies := f.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	bindings := f.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!(object.metadata.name in [" + strings.Join(quoted, ", ") + "])",
				Message:    "e2e test " + f.T.Name() + " keeps these Pods down: " + strings.Join(names, ", "),
				Reason:     ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: f.Namespace}},
			},
		},
	}
	lifted := false
	lift = func() {
		if lifted {
			return
		}
		lifted = true
		ctx, cancel := context.WithTimeout(context.Background(), admissionTimeout)
		defer cancel()
		err := errors.Join(ignoreNotFound(bindings.Delete(ctx, name, metav1.DeleteOptions{})),
			ignoreNotFound(policies.Delete(ctx, name, metav1.DeleteOptions{})))
		if err != nil {
			f.T.Errorf("lifting the Pod create denial: %v", err)
		}
	}
	f.T.Cleanup(lift)
	if _, err := policies.Create(f.Ctx, policy, metav1.CreateOptions{}); err != nil {
		f.T.Fatalf("creating ValidatingAdmissionPolicy %s: %v", name, err)
	}
	if _, err := bindings.Create(f.Ctx, binding, metav1.CreateOptions{}); err != nil {
		f.T.Fatalf("creating ValidatingAdmissionPolicyBinding %s: %v", name, err)
	}
	// A dry run goes through admission and stores nothing. A valid Pod is needed so that the
	// refusal can only come from the policy.
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: names[0], Namespace: f.Namespace},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "probe"}}},
	}
	err := f.Poll("Pod creates of "+strings.Join(names, ", ")+" refused", admissionTimeout, func(ctx context.Context) (bool, string, error) {
		_, err := f.Kube.CoreV1().Pods(f.Namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), name) {
			return true, "", nil
		}
		return false, fmt.Sprintf("dry-run create: %v", err), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	return lift
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
