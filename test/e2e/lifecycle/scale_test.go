//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/traffic"
)

// trafficRate is the request rate of the scale scenario's write traffic: enough for a
// meaningful history on a shared 2-core machine without starving the cluster.
const trafficRate = 50

// TestScaleUnderTraffic scales one cluster 1→3→5→3→1 while write traffic runs against its
// voters' Pod IPs (following them as members come and go) and checks: after every step the
// converged state (N voters, no learner, members = EtcdMembers, same cluster ID) and HashKV
// equal across members; during the whole flow never more than one learner and no duplicate
// member; at the end a linearizable history and 0 acknowledged writes lost. It records each
// step's duration and the longest write gap.
func TestScaleUnderTraffic(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)
	requireOperator(f)
	const name = "scale"
	createCluster(f, newCluster(f, name, 1))
	ec := waitConverged(f, name, 1, bootstrapTimeout)
	clusterID := ec.Status.ClusterID
	checkMembership(f, ec, 1)

	cli, endpoints := dialVoters(f, name)
	gen := traffic.New(traffic.Config{
		Endpoints: endpoints, Rate: trafficRate, MaxRequests: 1_000_000, MaxDuration: 30 * time.Minute,
	})
	trafficCtx, stopTraffic := context.WithCancel(f.Ctx)
	defer stopTraffic()
	done := make(chan struct{})
	var res *traffic.Result
	var runErr error
	go func() {
		defer close(done)
		res, runErr = gen.Run(trafficCtx)
	}()
	stopFollowing := f.FollowEndpoints(gen, voterSelector(name), false)
	defer stopFollowing()
	obs := observeMembership(f, name)
	waitAcked(f, gen, 50)

	prev := 1
	for _, n := range []int{3, 5, 3, 1} {
		start := time.Now()
		setReplicas(f, name, int32(n))
		ec = waitConverged(f, name, n, scaleTimeout*time.Duration(max(1, abs(n-prev))/2+1))
		f.Record(fmt.Sprintf("scale-%d-%d", prev, n), since(start), "under write traffic; replicas patch → converged")
		ids := checkMembership(f, ec, n)
		if ec.Status.ClusterID != clusterID {
			t.Errorf("status.clusterID %s after scaling to %d, was %s", ec.Status.ClusterID, n, clusterID)
		}
		eps, err := f.MemberEndpoints(f.Ctx, f.Namespace, voterSelector(name), false)
		if err != nil {
			t.Fatal(err)
		}
		rep := f.RequireHashKVEqual(cli, eps, time.Minute)
		t.Logf("scaled %d→%d in %s: members %v; %s", prev, n, since(start), ids, rep)
		// Keep the client's endpoints on live members for the next HashKV.
		cli.SetEndpoints(eps...)
		waitAcked(f, gen, gen.Stats().AckedPuts+50)
		prev = n
	}
	obs.check(f, clusterID)
	stopTraffic()
	<-done
	stopFollowing()
	if runErr != nil {
		t.Fatalf("traffic: %v", runErr)
	}
	t.Log(res)
	f.Record("write-gap-max", res.WriteGap.Length, "scale 1→3→5→3→1, longest interval without an acknowledged put")
	if _, err := res.Verify(200, f.ArtifactsDir); err != nil {
		t.Fatal(err)
	}
}

// TestKubectlScale scales a cluster with `kubectl scale etcdcluster/<name> --replicas=3`, which
// goes through the /scale subresource, and reads the subresource back.
func TestKubectlScale(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)
	requireOperator(f)
	const name = "kscale"
	createCluster(f, newCluster(f, name, 1))
	waitConverged(f, name, 1, bootstrapTimeout)
	kubectl := kubectlPath(f)
	start := time.Now()
	out, err := exec.CommandContext(f.Ctx, kubectl, "--kubeconfig", f.Kubeconfig, "-n", f.Namespace,
		"scale", "etcdcluster/"+name, "--replicas=3").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl scale: %v: %s", err, out)
	}
	t.Logf("kubectl scale: %s", strings.TrimSpace(string(out)))
	ec := waitConverged(f, name, 3, 2*scaleTimeout)
	f.Record("kubectl-scale-1-3", since(start), "kubectl scale --replicas=3 → converged")
	checkMembership(f, ec, 3)
	out, err = exec.CommandContext(f.Ctx, kubectl, "--kubeconfig", f.Kubeconfig, "-n", f.Namespace,
		"get", "etcdcluster/"+name, "--subresource=scale", "-o", "jsonpath={.spec.replicas} {.status.replicas} {.status.selector}").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get --subresource=scale: %v: %s", err, out)
	}
	if got, want := string(out), "3 3 "+podSelector(name); got != want {
		t.Errorf("scale subresource = %q, want %q", got, want)
	}
}

// kubectlPath finds the kubectl the project's binary cache holds (hack/binaries), next to the
// local cluster's kubeconfig.
func kubectlPath(f *framework.Test) string {
	f.T.Helper()
	cache := filepath.Dir(filepath.Dir(f.Kubeconfig))
	matches, _ := filepath.Glob(filepath.Join(cache, "bin", "kubernetes-*", "kubectl"))
	if len(matches) == 0 {
		if p, err := exec.LookPath("kubectl"); err == nil {
			return p
		}
		f.T.Skipf("no kubectl under %s/bin (run `go run ./hack/binaries kubernetes`)", cache)
	}
	return matches[len(matches)-1]
}

func waitAcked(f *framework.Test, gen *traffic.Generator, n int64) {
	f.T.Helper()
	if err := f.Poll(fmt.Sprintf("%d acknowledged writes", n), 2*time.Minute, func(context.Context) (bool, string, error) {
		s := gen.Stats()
		return s.AckedPuts >= n, fmt.Sprintf("%+v", s), nil
	}); err != nil {
		f.T.Fatal(err)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
