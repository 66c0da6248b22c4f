package etcdmember_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdmember"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// policyActivation bounds the wait for the API server to enforce a new admission policy (its
// policy informer syncs asynchronously).
const policyActivation = 30 * time.Second

// TestRefusedPodCreateRetried: while an admission policy refuses the member's Pod, the member
// says so in Ready (quoting the API server) and a Warning Event, and it keeps retrying on its
// own interval, so the Pod appears once the policy goes although nothing the controller
// watches changed (docs/e2e-lifecycle.md, finding 7). Before the fix the refusal was returned as
// an error: Ready never quoted it, and the retry waited on the growing error back-off.
func TestRefusedPodCreateRetried(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	lift := denyPodsIn(t, ns)
	c := newCluster(t, ns, "etcd", etcdv1alpha2.ReclaimPolicyDelete, "")
	m := newMember(t, c)

	waitCondition(t, m, etcdv1alpha2.ConditionReady, metav1.ConditionFalse, etcdmember.ReasonPodNotReady,
		"creating Pod "+m.Name+" was refused", "test keeps member Pods of "+ns+" down", "retrying every")
	wait.Eventually(t, convergeTimeout, "a PodCreateRefused Warning", func(ctx context.Context) error {
		n, err := countEvents(ctx, ns, m.Name, corev1.EventTypeWarning, etcdmember.EventPodCreateRefused)
		if err == nil && n == 0 {
			err = errors.New("none yet")
		}
		return err
	})

	lift()
	waitPod(t, m)
}

// denyPodsIn installs a ValidatingAdmissionPolicy that refuses every Pod create in namespace,
// waits until the API server enforces it, and returns the function that removes it.
func denyPodsIn(t *testing.T, namespace string) (lift func()) {
	t.Helper()
	ctx := t.Context()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "deny-pods-"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "false",
				Message:    "test keeps member Pods of " + namespace + " down",
				Reason:     ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
	if err := k8sClient.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: namespace}},
			},
		},
	}
	if err := k8sClient.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	lift = func() {
		if err := k8sClient.Delete(context.Background(), binding); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the policy binding: %v", err)
		}
		if err := k8sClient.Delete(context.Background(), policy); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the policy: %v", err)
		}
	}
	t.Cleanup(lift)

	probe := 0
	wait.Eventually(t, policyActivation, "the policy refuses Pods in "+namespace, func(ctx context.Context) error {
		probe++
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("probe-%d", probe)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "probe"}}},
		}
		err := k8sClient.Create(ctx, p)
		switch {
		case apierrors.IsForbidden(err):
			return nil
		case err == nil:
			_ = k8sClient.Delete(ctx, p)
			return errors.New("a probe Pod was still admitted")
		}
		return err
	})
	return lift
}
