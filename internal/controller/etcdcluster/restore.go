package etcdcluster

import (
	"fmt"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/podstate"
	"github.com/etcd-operator/etcd-operator/internal/restore"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// maxRawRestoreMessage bounds the quote of a termination message that is not the agent's result
// (the kubelet's fallback to the log's tail when the agent crashed before writing one).
const maxRawRestoreMessage = 300

// restoreFailure is why the seed's restore init container last failed, "<reason>: <message>",
// read from its termination message; empty when it did not fail, and for any member other than
// the seed of a cluster still forming. No Pod log is read: the agent writes its result where the
// kubelet keeps it in the Pod's status (docs/backup-restore.md, "Restore").
func restoreFailure(c *etcdv1alpha2.EtcdCluster, m *etcdv1alpha2.EtcdMember, pod *corev1.Pod) string {
	if c.Status.ClusterID != "" || !m.Spec.Bootstrap || m.Spec.Restore == nil {
		return ""
	}
	t := podstate.InitContainerFailure(pod, desired.RestoreContainerName)
	if t == nil {
		return ""
	}
	res, err := restore.ParseTerminationMessage([]byte(t.Message))
	if err == nil && res.Failed() {
		return string(res.Reason) + ": " + res.Message
	}
	// The agent wrote no result: killed (OOMKilled), or crashed before it could.
	msg := strings.Join(strings.Fields(t.Message), " ")
	if len(msg) > maxRawRestoreMessage {
		cut := maxRawRestoreMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	reason := t.Reason
	if reason == "" {
		reason = string(snapshot.ReasonFailed)
	}
	out := fmt.Sprintf("%s: the restore container exited with code %d", reason, t.ExitCode)
	if msg != "" {
		out += ": " + msg
	}
	return out
}
