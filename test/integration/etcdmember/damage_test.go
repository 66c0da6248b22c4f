package etcdmember_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// TestDamagedDataAfterPodRecreated: issue #15 through the controller and a real API server. A
// voter that was Ready records its Pod's template (status.readyTemplateHash); its Pod is
// deleted and recreated with that template, and the new Pod's etcd panics at every start
// ("cannot use none as id", captured from etcd 3.6 with garbage over its WAL's start: no known
// pattern). The first failed start is only watched; the second makes the member
// Healthy=False/DataCorrupt, which the cluster controller replaces — not StartFailed five
// minutes later.
func TestDamagedDataAfterPodRecreated(t *testing.T) {
	t.Parallel()
	c, m := runningVoter(t, "10.0.5.7")
	old := waitPod(t, m)
	wait.Eventually(t, convergeTimeout, "the Ready Pod's template is recorded", func(ctx context.Context) error {
		cur, err := getMember(ctx, m)
		if err != nil {
			return err
		}
		if want := old.Annotations[etcdv1alpha2.AnnotationTemplateHash]; want == "" || cur.Status.ReadyTemplateHash != want {
			return fmt.Errorf("readyTemplateHash = %q, want the Pod's %q", cur.Status.ReadyTemplateHash, want)
		}
		return nil
	})

	if err := k8sClient.Delete(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, convergeTimeout, "the Pod is recreated", func(ctx context.Context) error {
		p, err := getPod(ctx, m)
		if err != nil {
			return err
		}
		if p.UID == old.UID {
			return fmt.Errorf("still the old Pod")
		}
		if p.Annotations[etcdv1alpha2.AnnotationTemplateHash] != old.Annotations[etcdv1alpha2.AnnotationTemplateHash] {
			return fmt.Errorf("recreated with template %q, want %q", p.Annotations[etcdv1alpha2.AnnotationTemplateHash], old.Annotations[etcdv1alpha2.AnnotationTemplateHash])
		}
		return nil
	})
	markPodRunning(t, waitPod(t, m), "10.0.5.7", false)
	garbage := containerExit{reason: "Error", exitCode: 2, message: fixtureMessage(t, "3.6", "damage-wal-garbage-header")}

	crashContainer(t, m, 0, true, garbage, nil)
	waitCondition(t, m, etcdv1alpha2.ConditionHealthy, metav1.ConditionTrue, health.ReasonHealthy, "not Ready yet")
	crashContainer(t, m, 1, true, garbage, nil)
	waitCondition(t, m, etcdv1alpha2.ConditionHealthy, metav1.ConditionFalse, health.ReasonDataCorrupt,
		"2 starts", "template it ran before", "damaged")
	wantMemberFailed(t, c, m, 1)
}
