//go:build e2e

package framework

import (
	"context"
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/hack/localcluster/cluster"
	"github.com/etcd-operator/etcd-operator/test/utils/promserver"
)

// scrapeTargetsRefresh is how often ScrapePods lists the Pods again: a replaced member's Pod
// is scraped a second after it has an IP, like Kubernetes service discovery's watch would.
const scrapeTargetsRefresh = time.Second

// Prometheus starts a real Prometheus for this test (test/utils/promserver), built from the
// pinned module, listening on the local cluster's host address like the S3 server
// (docs/local-cluster.md, "S3 server"), with jobs whose targets the test sets (ScrapePods) and
// ruleFiles evaluated every interval; it is killed when the test ends. It skips the test when
// PROMETHEUS_BIN_DIR is unset outside CI; the e2e make targets set it.
func (f *Test) Prometheus(jobs []promserver.Job, ruleFiles ...string) *promserver.Server {
	f.T.Helper()
	return promserver.StartForTest(f.T, promserver.Options{Host: cluster.ControlPlaneIP, Jobs: jobs, RuleFiles: ruleFiles})
}

// ScrapePods keeps the targets of job equal to the Pods of namespace that match selector
// (PodScrapeTargets with port and podLabels), listing them every second until the test ends.
// The host reaches Pod IPs directly (docs/local-cluster.md, "Addresses"), so Prometheus scrapes
// the Pods as a PodMonitor would, without Kubernetes service discovery and without any name
// resolution. The first listing happens before it returns, and fails the test if it fails.
func (f *Test) ScrapePods(srv *promserver.Server, job, namespace, selector, port string, podLabels map[string]string) {
	f.T.Helper()
	sync1 := func(ctx context.Context, last []promserver.TargetGroup) ([]promserver.TargetGroup, error) {
		pods, err := f.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return last, err
		}
		groups := PodScrapeTargets(pods.Items, port, podLabels)
		if groups == nil {
			groups = []promserver.TargetGroup{}
		}
		if last != nil && reflect.DeepEqual(groups, last) {
			return last, nil
		}
		return groups, srv.SetTargets(job, groups)
	}
	last, err := sync1(f.Ctx, nil)
	if err != nil {
		f.T.Fatalf("scrape targets of %s: %v", job, err)
	}
	ctx, cancel := context.WithCancel(f.Ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(scrapeTargetsRefresh)
		defer tick.Stop()
		var lastErr string
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var err error
			if last, err = sync1(ctx, last); err != nil && err.Error() != lastErr && ctx.Err() == nil {
				lastErr = err.Error()
				f.T.Logf("refreshing scrape targets of %s (retrying): %v", job, err)
			}
		}
	})
	// Stopped before the test ends: Logf after the end would panic.
	f.T.Cleanup(func() { cancel(); wg.Wait() })
}
