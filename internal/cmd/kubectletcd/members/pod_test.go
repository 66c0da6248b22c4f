package members_test

import (
	"context"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve/etcdobservetest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/members"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

func TestPodMode(t *testing.T) {
	s, err := legacyfixture.Build(legacyfixture.Options{Name: "old", Namespace: etcdobservetest.Namespace, Formed: true})
	if err != nil {
		t.Fatal(err)
	}
	f := etcdobservetest.Pods(s.ExpectedPods()...)
	// A member whose Pod is gone, and one added but never started.
	delete(f.Pods, "old-2")
	f.EtcdMembers = append(f.EtcdMembers, etcdclient.Member{ID: 0x3f6b2d90c1e8a457, PeerURLs: []string{"https://old-3.old-headless.tenant.svc:2380"}, IsLearner: true})
	for _, format := range []string{invocation.OutputText, invocation.OutputJSON} {
		e := f.PodEnv(t, "old-0")
		e.Deps.Globals.Output = format
		if err := members.RunPod(context.Background(), e.Deps); err != nil {
			t.Fatal(err)
		}
		golden(t, "pod."+format+".golden", e.Out.String())
	}
}
