//go:build e2e

package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// How the agent's process is sampled from the host while its Pod runs: its VmHWM is a
// high-water mark, so only the last agentSamplePeriod before it exits can be missed; its Pod is
// looked for less often, through the API server.
const (
	agentSamplePeriod = 10 * time.Millisecond
	agentLookupPeriod = 200 * time.Millisecond
)

// agentRun is what the test learned about the agent's run of one snapshot.
type agentRun struct {
	// result is the agent's termination message.
	result snapshot.Result
	// stream is the agent's stream time: its streamMillis, or for an agent that does not report
	// it, the "seconds" of its "snapshot stored" log line.
	stream time.Duration
	// sampledPeak is the largest VmHWM read from the host's /proc while it ran; 0 when the
	// process was not found in time.
	sampledPeak int64
	// size is the artifact's, as read back from the claim.
	size int64
}

// sampleAgentPeak watches, from the host, the process of the snapshot agent of snapshotName
// once its container runs, and returns a function that stops watching and returns the largest
// VmHWM seen (0 if the process was never found). It measures the agent whatever it reports, and
// so checks what it reports.
func sampleAgentPeak(f *framework.Test, snapshotName string) (stop func() int64) {
	ctx, cancel := context.WithCancel(f.Ctx)
	var peak atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		pid := 0
		for wait := agentLookupPeriod; ; {
			if pid == 0 {
				pid = runningAgentPID(ctx, f, snapshotName)
			}
			if pid != 0 {
				m, err := framework.HostProc.Memory(pid)
				if err != nil { // the process ended
					return
				}
				peak.Store(max(peak.Load(), m.HWM))
				wait = agentSamplePeriod
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}()
	return func() int64 {
		cancel()
		<-done
		return peak.Load()
	}
}

// runningAgentPID is the host pid of the running agent container of snapshotName's Pod; 0 while
// there is none.
func runningAgentPID(ctx context.Context, f *framework.Test, snapshotName string) int {
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: etcdv1alpha2.LabelSnapshot + "=" + snapshotName})
	if err != nil {
		return 0
	}
	for _, p := range pods.Items {
		for _, s := range p.Status.ContainerStatuses {
			if s.Name != desired.SnapshotAgentContainer || s.State.Running == nil {
				continue
			}
			if pid, err := framework.HostProc.ContainerProcess(strings.TrimPrefix(s.ContainerID, "containerd://")); err == nil {
				return pid
			}
		}
	}
	return 0
}

// finishedAgent reads the result the agent of snapshotName wrote to its container's termination
// message and its stream time.
func finishedAgent(f *framework.Test, snapshotName string) agentRun {
	f.T.Helper()
	pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: etcdv1alpha2.LabelSnapshot + "=" + snapshotName})
	if err != nil {
		f.T.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, s := range p.Status.ContainerStatuses {
			if term := s.State.Terminated; s.Name == desired.SnapshotAgentContainer && term != nil && term.ExitCode == 0 {
				res, err := snapshot.ParseTerminationMessage([]byte(term.Message))
				if err != nil {
					f.T.Fatalf("Pod %s: %v", p.Name, err)
				}
				run := agentRun{result: res, stream: time.Duration(res.StreamMillis) * time.Millisecond}
				if run.stream <= 0 {
					run.stream = loggedStreamTime(f, p.Name)
				}
				return run
			}
		}
	}
	f.T.Fatalf("no Pod of snapshot %s ended with exit code 0 (%d Pods)", snapshotName, len(pods.Items))
	return agentRun{}
}

// loggedStreamTime reads the "seconds" of the "snapshot stored" line an agent logs, for an
// agent older than its streamMillis: the same interval, from the first Status after the stream
// opened rather than from the opening.
func loggedStreamTime(f *framework.Test, pod string) time.Duration {
	f.T.Helper()
	logs, err := f.Kube.CoreV1().Pods(f.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: desired.SnapshotAgentContainer}).DoRaw(f.Ctx)
	if err != nil {
		f.T.Fatalf("the agent's log: %v", err)
	}
	for line := range bytes.SplitSeq(logs, []byte("\n")) {
		var entry struct {
			Msg     string  `json:"msg"`
			Seconds float64 `json:"seconds"`
		}
		if json.Unmarshal(line, &entry) == nil && entry.Msg == "snapshot stored" && entry.Seconds > 0 {
			f.T.Logf("the agent reports no streamMillis (an image older than this test): its log says %.2fs", entry.Seconds)
			return time.Duration(entry.Seconds * float64(time.Second))
		}
	}
	f.T.Fatalf("the agent reported no streamMillis and logged no \"snapshot stored\" line:\n%s", logs)
	return 0
}
