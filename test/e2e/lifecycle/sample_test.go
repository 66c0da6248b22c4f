//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// apiSample is the example of docs/api.md, "Example", unchanged but for its namespace (tenant-a
// becomes the test namespace). It asks for cert-manager TLS and auth; this operator version
// implements neither yet (it refuses them by name and starts nothing).
const apiSample = `apiVersion: etcd-operator.cozystack.io/v1alpha2
kind: EtcdCluster
metadata: {name: etcd, namespace: tenant-a}
spec:
  replicas: 3
  version: 3.6.5
  storage: {size: 4Gi, reclaimPolicy: Retain}            # reclaimPolicy: this project only
  tls:
    client: {certManager: {serverIssuerRef: {name: etcd-ca}, operatorClientIssuerRef: {name: etcd-ca}}}
    peer:   {certManager: {issuerRef: {name: etcd-ca}}}
  auth: {enabled: true, rootCredentialsSecretRef: {name: etcd-root}}
  options: {autoCompactionMode: periodic, autoCompactionRetention: 5m}
  tolerations: [{key: dedicated, value: etcd, effect: NoSchedule}]   # this project only
  clientService: {type: LoadBalancer}                                # this project only
`

// sampleObserve is how long the scenario watches the sample cluster after the operator first
// reports on it, to catch an operator crash or a status that claims availability.
const sampleObserve = 45 * time.Second

// TestAPISample applies the docs/api.md example with kubectl: the API server must accept it
// unchanged, and the operator must report honest status (Available not True, with a reason and
// a message) without crashing (no operator container restart) and without serving a cluster
// that ignores the requested TLS and auth.
func TestAPISample(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke)
	requireOperator(f)
	d, err := f.OperatorDeployment(f.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := waitOperatorRolled(f.Ctx, f, d.Name); err != nil {
		t.Fatal(err)
	}
	restartsBefore := operatorRestarts(f)
	const name = "etcd"
	applySample(f, name)
	var ec *etcdv1alpha2.EtcdCluster
	start := time.Now()
	err = f.Poll("operator to report on the sample", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		ec, err = getCluster(ctx, f, name)
		if err != nil {
			return false, err.Error(), nil
		}
		return findCond(ec, etcdv1alpha2.ConditionAvailable) != nil && ec.Status.ObservedGeneration == ec.Generation, clusterState(ec), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Record("sample-first-status", since(start), "docs/api.md example: apply → first Available condition")
	ec = watchSample(f, name)
	logSampleState(f, ec)
	restarted := 0
	for uid, n := range operatorRestarts(f) {
		restarted += int(n - restartsBefore[uid])
	}
	if restarted != 0 {
		t.Errorf("the operator's containers restarted %d times while it handled the sample", restarted)
	}
	if c := findCond(ec, etcdv1alpha2.ConditionAvailable); c == nil || c.Status == metav1.ConditionTrue {
		t.Errorf("Available = %+v, want not True with a reason", c)
	}
}

// TestAPISampleRefusedAsNotSupported applies the docs/api.md example, which asks for client TLS
// and peer certificates from cert-manager, and auth: this release builds none of them, so the
// operator must refuse it by name, as docs/design/membership-flows.md, "Features not supported
// yet", says: Available=False, Progressing=False and Degraded=True with reason FeatureNotSupported,
// naming spec.tls.peer.certManager (client TLS and auth are built); and nothing that would
// start etcd while ignoring them (no EtcdMember, no Pod) across the window that follows (the
// operator looks again every 10 s for the TLS Secrets the example names).
func TestAPISampleRefusedAsNotSupported(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke, framework.Security)
	requireOperator(f)
	const name = "etcd"
	start := time.Now()
	applySample(f, name)
	ec := &etcdv1alpha2.EtcdCluster{}
	fields := []string{"spec.tls.peer.certManager"}
	err := f.Poll("Available=False, Progressing=False, Degraded=True, all FeatureNotSupported", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		got, err := getCluster(ctx, f, name)
		if err != nil {
			if ctx.Err() != nil {
				return false, "", nil // keep the last state seen
			}
			return false, err.Error(), nil
		}
		ec = got
		for typ, want := range map[string]metav1.ConditionStatus{etcdv1alpha2.ConditionAvailable: metav1.ConditionFalse,
			etcdv1alpha2.ConditionProgressing: metav1.ConditionFalse, etcdv1alpha2.ConditionDegraded: metav1.ConditionTrue} {
			c := findCond(ec, typ)
			if c == nil || c.Status != want || c.Reason != "FeatureNotSupported" {
				return false, clusterState(ec), nil
			}
			for _, field := range fields {
				if !strings.Contains(c.Message, field) {
					return false, "", fmt.Errorf("%s message %q does not name %s", typ, c.Message, field)
				}
			}
		}
		return true, clusterState(ec), nil
	})
	if err != nil {
		logSampleConditions(f, ec, name)
		t.Fatal(err)
	}
	f.Record("sample-feature-not-supported", since(start), "docs/api.md example: apply → FeatureNotSupported")
	for _, c := range ec.Status.Conditions {
		t.Logf("  %s=%s reason %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	refused := time.Now()
	err = f.Poll("no EtcdMember and no Pod across two TLS Secret looks", 60*time.Second, func(ctx context.Context) (bool, string, error) {
		members, err := listMembers(ctx, f, name)
		if err != nil {
			return false, err.Error(), nil
		}
		pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		if len(members) != 0 || len(pods.Items) != 0 {
			return false, "", fmt.Errorf("%d EtcdMembers and %d Pods exist although the sample asks for what is not supported", len(members), len(pods.Items))
		}
		return time.Since(refused) > 25*time.Second, "watching", nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// logSampleConditions logs the sample's and its members' conditions, for a failed wait.
func logSampleConditions(f *framework.Test, ec *etcdv1alpha2.EtcdCluster, name string) {
	f.T.Helper()
	for _, c := range ec.Status.Conditions {
		f.T.Logf("  %s=%s reason %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	members, _ := listMembers(f.Ctx, f, name)
	for _, m := range members {
		for _, c := range m.Status.Conditions {
			f.T.Logf("  EtcdMember %s %s=%s reason %s: %s", m.Name, c.Type, c.Status, c.Reason, c.Message)
		}
	}
}

// applySample applies the docs/api.md example with kubectl into the test namespace and checks
// that the API server kept what it asked for.
func applySample(f *framework.Test, name string) {
	f.T.Helper()
	manifest := strings.Replace(apiSample, "namespace: tenant-a", "namespace: "+f.Namespace, 1)
	cmd := exec.CommandContext(f.Ctx, kubectlPath(f), "--kubeconfig", f.Kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.CombinedOutput()
	if err != nil {
		f.T.Fatalf("kubectl apply of the docs/api.md example: %v: %s", err, out)
	}
	f.T.Logf("kubectl apply: %s", strings.TrimSpace(string(out)))
	ec, err := getCluster(f.Ctx, f, name)
	if err != nil {
		f.T.Fatal(err)
	}
	sp := ec.Spec
	if sp.TLS == nil || sp.TLS.Client == nil || sp.TLS.Client.CertManager == nil || sp.TLS.Peer == nil || sp.TLS.Peer.CertManager == nil ||
		sp.Auth == nil || !sp.Auth.Enabled || sp.Storage.ReclaimPolicy != etcdv1alpha2.ReclaimPolicyRetain || sp.Version != "3.6.5" ||
		sp.Replicas == nil || *sp.Replicas != 3 || len(sp.Tolerations) != 1 || sp.ClientService == nil || sp.ClientService.Type != "LoadBalancer" {
		f.T.Errorf("the API server changed the sample: %+v", sp)
	}
}

// watchSample watches the sample cluster for sampleObserve: Available must never become True.
// It returns the last state read.
func watchSample(f *framework.Test, name string) *etcdv1alpha2.EtcdCluster {
	f.T.Helper()
	deadline := time.Now().Add(sampleObserve)
	var seen []string
	ec := &etcdv1alpha2.EtcdCluster{}
	err := f.Poll("sample observation window", sampleObserve+30*time.Second, func(ctx context.Context) (bool, string, error) {
		got, err := getCluster(ctx, f, name)
		if err != nil {
			return false, err.Error(), nil
		}
		ec = got
		if c := findCond(ec, etcdv1alpha2.ConditionAvailable); c != nil {
			s := fmt.Sprintf("Available=%s/%s: %s", c.Status, c.Reason, c.Message)
			if len(seen) == 0 || seen[len(seen)-1] != s {
				seen = append(seen, s)
			}
			if c.Status == metav1.ConditionTrue {
				return false, "", fmt.Errorf("the sample cluster reports %s although cert-manager TLS and auth are not in place", s)
			}
		}
		return time.Now().After(deadline), clusterState(ec), nil
	})
	if err != nil {
		f.T.Fatal(err)
	}
	f.T.Logf("Available transitions seen: %q", seen)
	return ec
}

// logSampleState logs the sample's conditions, Pods and Events (the scenario documents what the
// operator does with it) and fails on a condition without reason or message or a Ready Pod.
func logSampleState(f *framework.Test, ec *etcdv1alpha2.EtcdCluster) {
	f.T.Helper()
	f.T.Logf("status of the sample: %s", clusterState(ec))
	for _, c := range ec.Status.Conditions {
		f.T.Logf("  %s=%s reason %s: %s", c.Type, c.Status, c.Reason, c.Message)
		if c.Reason == "" || c.Message == "" {
			f.T.Errorf("condition %s has no reason or message: %+v", c.Type, c)
		}
	}
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	for _, p := range pods.Items {
		f.T.Logf("Pod %s: %s", p.Name, podSummary(&p))
		if framework.PodReady(&p) {
			f.T.Errorf("member Pod %s is Ready although the TLS it must serve with does not exist", p.Name)
		}
	}
	events, err := f.Kube.CoreV1().Events(f.Namespace).List(f.Ctx, metav1.ListOptions{})
	if err == nil {
		for _, e := range events.Items {
			f.T.Logf("Event %s %s/%s %s: %s", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}

func podSummary(p *corev1.Pod) string {
	var st []string
	for _, c := range p.Status.ContainerStatuses {
		s := fmt.Sprintf("%s ready=%t restarts=%d", c.Name, c.Ready, c.RestartCount)
		if w := c.State.Waiting; w != nil {
			s += " waiting " + w.Reason
		}
		st = append(st, s)
	}
	return fmt.Sprintf("phase %s on %q %v", p.Status.Phase, p.Spec.NodeName, st)
}

// operatorRestarts returns the container restart counts of the operator's Pods by Pod UID, so
// that a Pod replaced between two reads is not mistaken for restarts.
func operatorRestarts(f *framework.Test) map[types.UID]int32 {
	f.T.Helper()
	pods, err := f.Kube.CoreV1().Pods(framework.OperatorNamespace).List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	out := map[types.UID]int32{}
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			out[p.UID] += c.RestartCount
		}
	}
	return out
}
