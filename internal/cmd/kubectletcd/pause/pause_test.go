package pause_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/pause"
)

func cluster(medium etcdv1alpha2.StorageMedium, replicas int32) *etcdv1alpha2.EtcdCluster {
	return &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "demo"},
		Spec: etcdv1alpha2.EtcdClusterSpec{
			Replicas: ptr.To(replicas),
			Storage:  etcdv1alpha2.StorageSpec{Medium: medium, Size: ptr.To(resource.MustParse("1Gi"))},
		},
	}
}

func get(t *testing.T, e *invocationtest.Env) *etcdv1alpha2.EtcdCluster {
	t.Helper()
	c := &etcdv1alpha2.EtcdCluster{}
	if err := e.Deps.Kube.Get(context.Background(), client.ObjectKey{Namespace: "tenant", Name: "demo"}, c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDryRunChangesNothing(t *testing.T) {
	e := invocationtest.New(t, "tenant", cluster("", 3))
	if err := pause.Run(context.Background(), pause.Options{Cluster: "demo"}, e.Deps); err != nil {
		t.Fatal(err)
	}
	if got := e.Out.String(); !strings.Contains(got, "spec.replicas 3 → 0") {
		t.Errorf("plan does not show the change:\n%s", got)
	}
	if c := get(t, e); *c.Spec.Replicas != 3 || c.Annotations[etcdv1alpha2.AnnotationPausedReplicas] != "" {
		t.Errorf("dry run changed the cluster: replicas %d, annotations %v", *c.Spec.Replicas, c.Annotations)
	}
}

func TestApplyWithYesRecordsReplicas(t *testing.T) {
	e := invocationtest.New(t, "tenant", cluster("", 5))
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	if err := pause.Run(context.Background(), pause.Options{Cluster: "demo"}, e.Deps); err != nil {
		t.Fatal(err)
	}
	c := get(t, e)
	if *c.Spec.Replicas != 0 || c.Annotations[etcdv1alpha2.AnnotationPausedReplicas] != "5" {
		t.Errorf("got replicas %d, paused-replicas %q; want 0 and \"5\"", *c.Spec.Replicas, c.Annotations[etcdv1alpha2.AnnotationPausedReplicas])
	}
}

func TestApplyWithoutTerminalOrYesIsRefusedWithExit2(t *testing.T) {
	e := invocationtest.New(t, "tenant", cluster("", 3))
	e.Deps.Globals.Apply = true
	err := pause.Run(context.Background(), pause.Options{Cluster: "demo"}, e.Deps)
	if invocation.Code(err) != invocation.ExitUsage || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("got %v (exit %d), want exit 2 naming --yes", err, invocation.Code(err))
	}
	if c := get(t, e); *c.Spec.Replicas != 3 {
		t.Errorf("unconfirmed apply changed replicas to %d", *c.Spec.Replicas)
	}
}

func TestApplyAsksOnATerminal(t *testing.T) {
	for _, answer := range []bool{false, true} {
		e := invocationtest.New(t, "tenant", cluster("", 3))
		e.Deps.Globals.Apply = true
		e.Prompter.Terminal, e.Prompter.Answer = true, answer
		err := pause.Run(context.Background(), pause.Options{Cluster: "demo"}, e.Deps)
		if len(e.Prompter.Asked) != 1 {
			t.Fatalf("asked %d questions, want 1", len(e.Prompter.Asked))
		}
		paused := *get(t, e).Spec.Replicas == 0
		if paused != answer || (err == nil) != answer {
			t.Errorf("answer %t: paused %t, err %v", answer, paused, err)
		}
	}
}

func TestMemoryClusterIsRefusedWithExit3(t *testing.T) {
	e := invocationtest.New(t, "tenant", cluster(etcdv1alpha2.StorageMediumMemory, 3))
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	err := pause.Run(context.Background(), pause.Options{Cluster: "demo"}, e.Deps)
	if invocation.Code(err) != invocation.ExitRefused || !strings.Contains(err.Error(), pause.RuleMemoryCluster) {
		t.Fatalf("got %v (exit %d), want exit 3 naming %s", err, invocation.Code(err), pause.RuleMemoryCluster)
	}
	if *get(t, e).Spec.Replicas != 3 {
		t.Error("a refused pause changed the cluster")
	}
}

func TestMissingClusterNamesTheOnesThatExist(t *testing.T) {
	e := invocationtest.New(t, "tenant", cluster("", 3))
	err := pause.Run(context.Background(), pause.Options{Cluster: "dmeo"}, e.Deps)
	if err == nil || !strings.Contains(err.Error(), "namespace tenant has: demo") {
		t.Fatalf("got %v, want the existing clusters named", err)
	}
}
