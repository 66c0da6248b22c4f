//go:build e2e

package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// operatorTimeout bounds waiting for the operator to stop or become available again.
const operatorTimeout = 2 * time.Minute

// ErrNoOperator means the operator namespace holds no Deployment (is it deployed? `make deploy`).
var ErrNoOperator = errors.New("no operator Deployment in " + OperatorNamespace)

// DeletePod deletes a Pod, as a user or a controller would; gracePeriod nil keeps the Pod's
// own terminationGracePeriodSeconds, 0 deletes at once.
func (s *Suite) DeletePod(ctx context.Context, namespace, name string, gracePeriod *int64) error {
	err := s.Kube.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: gracePeriod})
	if err != nil {
		return fmt.Errorf("deleting Pod %s/%s: %w", namespace, name, err)
	}
	return nil
}

// EvictPod evicts a Pod through the Eviction API, which honours PodDisruptionBudgets as a
// drain does. The API answers 429 TooManyRequests while a budget forbids the eviction; callers
// test for it with apierrors.IsTooManyRequests on the returned error.
func (s *Suite) EvictPod(ctx context.Context, namespace, name string) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if err := s.Kube.PolicyV1().Evictions(namespace).Evict(ctx, ev); err != nil {
		return fmt.Errorf("evicting Pod %s/%s: %w", namespace, name, err)
	}
	return nil
}

// EvictWhenAllowed evicts the Pod through the Eviction API as a drain would, retrying while a
// PodDisruptionBudget refuses it (429 TooManyRequests: a member that just joined is not counted
// healthy yet), and returns when the eviction was accepted.
func (s *Suite) EvictWhenAllowed(ctx context.Context, namespace, name string, timeout time.Duration) (time.Time, error) {
	var at time.Time
	err := Poll(ctx, "eviction of "+name+" allowed by the PDB", timeout, DefaultPollInterval, func(ctx context.Context) (bool, string, error) {
		err := s.EvictPod(ctx, namespace, name)
		switch {
		case err == nil:
			at = time.Now()
			return true, "", nil
		case apierrors.IsTooManyRequests(err):
			return false, err.Error(), nil
		}
		return false, "", err
	})
	return at, err
}

// ScaleDeployment sets a Deployment's replicas through the scale subresource and returns the
// previous value. It uses the typed client: the unstructured client cannot send a typed Scale
// body (TESTING.md, "Rules for tests").
func (s *Suite) ScaleDeployment(ctx context.Context, namespace, name string, replicas int32) (int32, error) {
	deployments := s.Kube.AppsV1().Deployments(namespace)
	sc, err := deployments.GetScale(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("reading scale of Deployment %s/%s: %w", namespace, name, err)
	}
	prev := sc.Spec.Replicas
	sc.Spec = autoscalingv1.ScaleSpec{Replicas: replicas}
	if _, err := deployments.UpdateScale(ctx, name, sc, metav1.UpdateOptions{}); err != nil {
		return prev, fmt.Errorf("scaling Deployment %s/%s to %d: %w", namespace, name, replicas, err)
	}
	return prev, nil
}

// OperatorDeployment returns the operator's Deployment: $E2E_OPERATOR_DEPLOYMENT in
// OperatorNamespace, else the only Deployment there.
func (s *Suite) OperatorDeployment(ctx context.Context) (*appsv1.Deployment, error) {
	deployments := s.Kube.AppsV1().Deployments(OperatorNamespace)
	if name := os.Getenv(EnvOperatorDeployment); name != "" {
		d, err := deployments.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading operator Deployment: %w", err)
		}
		return d, nil
	}
	list, err := deployments.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Deployments in %s: %w", OperatorNamespace, err)
	}
	switch len(list.Items) {
	case 0:
		return nil, ErrNoOperator
	case 1:
		return &list.Items[0], nil
	default:
		return nil, fmt.Errorf("%d Deployments in %s; set %s", len(list.Items), OperatorNamespace, EnvOperatorDeployment)
	}
}

// StopOperator scales the operator to 0, waits until its Pods are gone, and returns a function
// that scales it back to its previous replicas and waits until it is available. Tests call the
// returned function themselves to time the recovery; a cleanup also calls it, so the operator
// is never left stopped, even when the test fails half-way.
func (f *Test) StopOperator() func() error {
	f.T.Helper()
	d, err := f.OperatorDeployment(f.Ctx)
	if err != nil {
		f.T.Fatalf("stopping the operator: %v", err)
	}
	prev, err := f.ScaleDeployment(f.Ctx, d.Namespace, d.Name, 0)
	if err != nil {
		f.T.Fatalf("stopping the operator: %v", err)
	}
	restored := false
	restore := func() error {
		if restored {
			return nil
		}
		restored = true
		ctx, cancel := context.WithTimeout(context.Background(), operatorTimeout)
		defer cancel()
		if _, err := f.ScaleDeployment(ctx, d.Namespace, d.Name, prev); err != nil {
			return err
		}
		return f.WaitForDeploymentAvailable(ctx, d.Namespace, d.Name, operatorTimeout)
	}
	f.T.Cleanup(func() {
		if err := restore(); err != nil {
			f.T.Errorf("restoring the operator: %v", err)
		}
	})
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		f.T.Fatalf("operator selector: %v", err)
	}
	if err := f.WaitForNoPods(f.Ctx, d.Namespace, sel.String(), operatorTimeout); err != nil {
		f.T.Fatalf("stopping the operator: %v", err)
	}
	return restore
}

// RequireNodeFaults returns the node fault injector or skips the test when the cluster tool
// provides none.
func (f *Test) RequireNodeFaults() NodeFaults {
	f.T.Helper()
	return require(f.T, f.Cluster.Nodes, "node stop/start faults")
}

// RequireContainerFaults returns the container fault injector or skips the test.
func (f *Test) RequireContainerFaults() ContainerFaults {
	f.T.Helper()
	return require(f.T, f.Cluster.Containers, "container kill faults")
}

// RequireDataDirFaults returns the data-dir fault injector or skips the test.
func (f *Test) RequireDataDirFaults() DataDirFaults {
	f.T.Helper()
	return require(f.T, f.Cluster.DataDirs, "data-dir wipe/corrupt faults")
}

// RequireClusterRecords returns the cluster tool's audit and DNS query logs or skips the test.
func (f *Test) RequireClusterRecords() ClusterRecords {
	f.T.Helper()
	return require(f.T, f.Cluster.Records, "audit and DNS query logs")
}

// RequireVolumes returns the reader of volumes' host folders or skips the test.
func (f *Test) RequireVolumes() Volumes {
	f.T.Helper()
	return require(f.T, f.Cluster.Volumes, "host folders of volumes")
}

func require[T any](t *testing.T, v T, what string) T {
	t.Helper()
	if any(v) == nil {
		t.Skipf("the local cluster tool does not provide %s (not a run against it?)", what)
	}
	return v
}
