//go:build e2e

package framework

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeStartTimeout bounds starting a stopped node again and its turning Ready.
const nodeStartTimeout = 2 * time.Minute

// StopNode stops the node through the cluster tool (NodeFaults; the test is skipped without
// it) and returns the function that starts it again and waits for it to be Ready. A cleanup
// calls that function too, so the node is never left stopped, whatever failed.
func (f *Test) StopNode(node string) (restart func()) {
	f.T.Helper()
	nodes := f.RequireNodeFaults()
	if err := nodes.StopNode(f.Ctx, node); err != nil {
		f.T.Fatal(err)
	}
	started := false
	restart = func() {
		if started {
			return
		}
		started = true
		// The test's context may be over (a cleanup): the start has its own bound.
		ctx, cancel := context.WithTimeout(context.Background(), nodeStartTimeout)
		defer cancel()
		if err := nodes.StartNode(ctx, node); err != nil {
			f.T.Errorf("starting node %s again: %v", node, err)
			return
		}
		if err := f.WaitForNodeReady(ctx, node, nodeStartTimeout); err != nil {
			f.T.Error(err)
		}
	}
	f.T.Cleanup(restart)
	return restart
}

// WaitForNodeReady waits until the node's Ready condition is True.
func (s *Suite) WaitForNodeReady(ctx context.Context, node string, timeout time.Duration) error {
	return Poll(ctx, "node "+node+" Ready", timeout, DefaultPollInterval, func(ctx context.Context) (bool, string, error) {
		n, err := s.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil // API hiccups are retried until the timeout
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, string(c.Status), nil
			}
		}
		return false, "no Ready condition", nil
	})
}

// OperatorNodes are the nodes the Pods in OperatorNamespace run on: a test that stops a node
// avoids them, so that it does not stop the operator too.
func (s *Suite) OperatorNodes(ctx context.Context) (map[string]bool, error) {
	pods, err := s.Kube.CoreV1().Pods(OperatorNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Pods in %s: %w", OperatorNamespace, err)
	}
	out := map[string]bool{}
	for _, p := range pods.Items {
		out[p.Spec.NodeName] = true
	}
	return out, nil
}
