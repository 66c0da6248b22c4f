//go:build e2e

package lifecycle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// pluginStatus is the part of `kubectl etcd status -o json` (schema kubectl-etcd/v1) the tests
// read (docs/kubectl-etcd.md, "status").
type pluginStatus struct {
	Schema  string `json:"schema"`
	Kind    string `json:"kind"`
	Cluster struct {
		ClusterID string `json:"clusterID"`
		Auth      string `json:"auth"`
	} `json:"cluster"`
	Members []pluginMember `json:"members"`
}

type pluginMember struct {
	Name string `json:"name"`
	ID   string `json:"id"`
	Role string `json:"role"`
}

func (s pluginStatus) leader() string {
	for _, m := range s.Members {
		if m.Role == "leader" {
			return m.Name
		}
	}
	return ""
}

// follower is a member that does not lead: defrag --pod refuses the leader.
func (s pluginStatus) follower() string {
	for _, m := range s.Members {
		if m.Role == "follower" {
			return m.Name
		}
	}
	return ""
}

func (s pluginStatus) ids() []string {
	var ids []string
	for _, m := range s.Members {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	return ids
}

// runPlugin runs `kubectl etcd args...` and fails the test unless it exits with want.
func runPlugin(f *framework.Test, k *framework.Plugin, want int, args ...string) framework.PluginResult {
	f.T.Helper()
	ctx, cancel := context.WithTimeout(f.Ctx, 16*time.Minute)
	defer cancel()
	r := k.Run(ctx, args...)
	if r.Code != want {
		f.T.Fatalf("kubectl etcd %s: want exit %d, got %s", strings.Join(args, " "), want, r)
	}
	return r
}

func readPluginStatus(f *framework.Test, k *framework.Plugin, name string) pluginStatus {
	f.T.Helper()
	r := runPlugin(f, k, 0, "status", name, "-o", "json")
	var s pluginStatus
	if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil {
		f.T.Fatalf("status -o json is not JSON: %v\n%s", err, r.Stdout)
	}
	if s.Schema != "kubectl-etcd/v1" || s.Kind != "Status" {
		f.T.Fatalf("status -o json has schema %q kind %q, want kubectl-etcd/v1 Status", s.Schema, s.Kind)
	}
	return s
}

// TestKubectlEtcdReadsAndMaintains drives the plugin as a user would, through kubectl's plugin
// lookup, on a healthy 3-member PVC cluster: status (timed, median of 5), status -o json and
// --no-etcd, members, alarm list, move-leader (dry run, refused without --yes off a terminal,
// applied), compact, snapshot save (and its refusal to overwrite) and defrag --wait.
func TestKubectlEtcdReadsAndMaintains(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Smoke, framework.Tools)
	requireOperator(f)
	const name = "plugin"
	createCluster(f, newCluster(f, name, 3))
	ec := waitConverged(f, name, 3, bootstrapTimeout)
	k := f.KubectlEtcd()

	var took []time.Duration
	var text string
	for range 5 {
		start := time.Now()
		text = runPlugin(f, k, 0, "status", name).Stdout
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	f.Record("kubectl-etcd-status", took[2], "kubectl etcd status, healthy 3-member cluster, median of 5 runs through kubectl's plugin lookup and 3 port-forwards (target ≤ 1 s)")
	for _, want := range []string{"leader", "follower", ec.Status.ClusterID} {
		if !strings.Contains(text, want) {
			t.Errorf("status does not show %q:\n%s", want, text)
		}
	}
	s := readPluginStatus(f, k, name)
	if len(s.Members) != 3 || s.leader() == "" || s.Cluster.ClusterID != ec.Status.ClusterID {
		t.Fatalf("status -o json: %d members, leader %q, cluster ID %q (want 3, one, %s)", len(s.Members), s.leader(), s.Cluster.ClusterID, ec.Status.ClusterID)
	}
	for _, args := range [][]string{{"status", name, "--no-etcd"}, {"members", name}} {
		out := runPlugin(f, k, 0, args...).Stdout
		for _, m := range s.Members {
			if !strings.Contains(out, m.Name) {
				t.Errorf("%s does not list %s:\n%s", strings.Join(args, " "), m.Name, out)
			}
		}
	}
	runPlugin(f, k, 0, "alarm", "list", name)
	requirePodMode(f, k, s, s.follower())
	if runs := listDefrags(f); len(runs) != 0 {
		t.Fatalf("a dry-run defrag --pod created EtcdDefrags %v", runs)
	}

	leader := s.leader()
	runPlugin(f, k, 0, "move-leader", name)
	runPlugin(f, k, 2, "move-leader", name, "--apply")
	if now := readPluginStatus(f, k, name).leader(); now != leader {
		t.Fatalf("a dry run and an unconfirmed --apply moved the leader from %s to %s", leader, now)
	}
	runPlugin(f, k, 0, "move-leader", name, "--apply", "--yes")
	if err := f.Poll("leadership moved off "+leader, time.Minute, func(context.Context) (bool, string, error) {
		now := readPluginStatus(f, k, name).leader()
		return now != "" && now != leader, "leader " + now, nil
	}); err != nil {
		t.Fatal(err)
	}
	runPlugin(f, k, 0, "compact", name, "--apply", "--yes")

	file := filepath.Join(t.TempDir(), "plugin.db")
	runPlugin(f, k, 0, "snapshot", "save", name, file)
	requireSHA256File(f, file)
	runPlugin(f, k, 3, "snapshot", "save", name, file)

	runPlugin(f, k, 0, "defrag", name, "--apply", "--yes", "--wait")
}

// requirePodMode drives compatibility mode through member pod as a user would: members, status
// -o json, alarm list and a dry-run defrag, each through that one Pod with the connection flags
// conn, and a command that refuses --pod (docs/kubectl-etcd.md, "Compatibility mode (--pod)").
func requirePodMode(f *framework.Test, k *framework.Plugin, s pluginStatus, pod string, conn ...string) []framework.PluginResult {
	f.T.Helper()
	with := func(args ...string) []string { return append(append(args, "--pod", pod), conn...) }
	const heading = "pod mode: etcd's view only, through Pod " // + namespace/pod
	members := runPlugin(f, k, 0, with("members")...)
	for _, id := range s.ids() {
		if !strings.Contains(members.Stdout, id) || !strings.Contains(members.Stdout, heading) {
			f.T.Errorf("members --pod %s does not list %s under the pod-mode heading:\n%s", pod, id, members)
		}
	}
	text := runPlugin(f, k, 0, with("status")...)
	// Logged for the documentation's capture (docs/kubectl-etcd.md, "Compatibility mode (--pod)").
	f.T.Logf("kubectl etcd status --pod %s:\n%s", pod, text.Stdout)
	status := runPlugin(f, k, 0, with("status", "-o", "json")...)
	var ps struct {
		Kind, Mode string
		Member     struct{ Name, ID, ClusterID string }
		Members    []struct{ ID string }
	}
	if err := json.Unmarshal([]byte(status.Stdout), &ps); err != nil {
		f.T.Fatalf("status --pod -o json is not JSON: %v\n%s", err, status)
	}
	if ps.Kind != "PodStatus" || ps.Mode != "pod" || ps.Member.Name != pod || strings.TrimLeft(ps.Member.ClusterID, "0") != strings.TrimLeft(s.Cluster.ClusterID, "0") || len(ps.Members) != len(s.Members) {
		f.T.Errorf("status --pod %s -o json: kind %q mode %q, member %q of cluster %q, %d members; want PodStatus, pod, %s of %s, %d",
			pod, ps.Kind, ps.Mode, ps.Member.Name, ps.Member.ClusterID, len(ps.Members), pod, s.Cluster.ClusterID, len(s.Members))
	}
	alarms := runPlugin(f, k, 0, with("alarm", "list")...)
	if !strings.Contains(alarms.Stdout, "No active alarm") {
		f.T.Errorf("alarm list --pod %s:\n%s", pod, alarms)
	}
	defrag := runPlugin(f, k, 0, with("defrag")...)
	f.T.Logf("kubectl etcd defrag --pod %s:\n%s", pod, defrag.Stdout)
	for _, want := range []string{heading, "etcd Defragment: defragment " + pod, "check ok      quorum-margin"} {
		if !strings.Contains(defrag.Stdout, want) || !strings.Contains(defrag.Stderr, "Dry run") {
			f.T.Errorf("defrag --pod %s dry run does not say %q:\n%s", pod, want, defrag)
		}
	}
	refused := runPlugin(f, k, 2, "pause", "--pod", pod)
	if !strings.Contains(refused.Stderr, "--pod") {
		f.T.Errorf("pause --pod does not name the flag:\n%s", refused)
	}
	return []framework.PluginResult{members, text, status, alarms, defrag}
}

// listDefrags names the EtcdDefrags of the test's namespace.
func listDefrags(f *framework.Test) []string {
	f.T.Helper()
	var l etcdv1alpha2.EtcdDefragList
	if err := kc(f).List(f.Ctx, &l, client.InNamespace(f.Namespace)); err != nil {
		f.T.Fatal(err)
	}
	var out []string
	for _, d := range l.Items {
		out = append(out, d.Name)
	}
	return out
}

// requireSHA256File checks that file.sha256 holds file's digest in sha256sum's format.
func requireSHA256File(f *framework.Test, file string) {
	f.T.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		f.T.Fatal(err)
	}
	if len(data) < 1024 {
		f.T.Fatalf("snapshot %s has %d bytes: not an etcd database", file, len(data))
	}
	side, err := os.ReadFile(file + ".sha256")
	if err != nil {
		f.T.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if fields := strings.Fields(string(side)); len(fields) == 0 || fields[0] != hex.EncodeToString(sum[:]) {
		f.T.Fatalf("%s.sha256 says %q; the file's digest is %x", file, side, sum)
	}
}

// TestKubectlEtcdMembershipThroughTheOperator drives the commands that change membership on a
// 3-member PVC cluster: remove-member refused by the operator's quorum rule while another member
// is frozen (exit 3, the rule named), then applied (3 → 2), replace-member (a fresh member for
// the one named), and pause then resume under the same cluster ID with the dormant member's ID.
func TestKubectlEtcdMembershipThroughTheOperator(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Tools)
	requireOperator(f)
	signals := f.RequireContainerSignals()
	const name = "pluginm"
	createCluster(f, newCluster(f, name, 3))
	waitConverged(f, name, 3, bootstrapTimeout)
	k := f.KubectlEtcd()
	s := readPluginStatus(f, k, name)
	frozen, victim := s.Members[0].Name, s.Members[1].Name

	if err := signals.SignalContainer(f.Ctx, f.Namespace, frozen, desired.ContainerName, "SIGSTOP"); err != nil {
		t.Fatal(err)
	}
	waitPodNotReady(f, frozen)
	r := runPlugin(f, k, 3, "remove-member", name, victim, "--apply", "--yes")
	if !strings.Contains(r.Stderr, "quorum") {
		t.Errorf("the refusal does not name the quorum rule:\n%s", r)
	}
	if err := signals.SignalContainer(f.Ctx, f.Namespace, frozen, desired.ContainerName, "SIGCONT"); err != nil {
		t.Fatal(err)
	}
	waitConverged(f, name, 3, bootstrapTimeout)

	runPlugin(f, k, 0, "remove-member", name, victim, "--apply", "--yes", "--wait")
	waitConverged(f, name, 2, bootstrapTimeout)
	if slices.ContainsFunc(readPluginStatus(f, k, name).Members, func(m pluginMember) bool { return m.Name == victim }) {
		t.Fatalf("%s is still a member after remove-member", victim)
	}

	replaced := readPluginStatus(f, k, name).Members[0].Name
	runPlugin(f, k, 0, "replace-member", name, replaced, "--reason", "e2e", "--apply", "--yes", "--wait")
	waitConverged(f, name, 2, bootstrapTimeout)
	after := readPluginStatus(f, k, name)
	for _, m := range after.Members {
		if m.Name == replaced {
			t.Fatalf("%s is still a member after replace-member", replaced)
		}
	}

	runPlugin(f, k, 0, "pause", name, "--apply", "--yes", "--wait")
	runPlugin(f, k, 0, "resume", name, "--apply", "--yes", "--wait")
	waitConverged(f, name, 2, bootstrapTimeout)
	// A pause keeps one dormant member (docs/lifecycle.md, "Pause and resume"): it wakes with
	// its member ID and data under the same cluster ID; the others are added afresh.
	resumed := readPluginStatus(f, k, name)
	if resumed.Cluster.ClusterID != after.Cluster.ClusterID || !slices.ContainsFunc(resumed.ids(), func(id string) bool { return slices.Contains(after.ids(), id) }) {
		t.Errorf("after pause and resume: cluster %s, members %v; before: cluster %s, members %v (want the same cluster and the dormant member's ID)",
			resumed.Cluster.ClusterID, resumed.ids(), after.Cluster.ClusterID, after.ids())
	}
}

// waitPodNotReady waits until member's Pod is not Ready: a frozen etcd fails its readiness
// probe, and the operator's quorum view (which the plugin imports) counts a voter whose Pod is not
// Ready as unhealthy. The member's Healthy condition stays True meanwhile ("not Ready yet"), so
// it is not what to wait for.
func waitPodNotReady(f *framework.Test, member string) {
	f.T.Helper()
	if err := f.Poll(member+" Pod not Ready", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		p := &corev1.Pod{}
		if err := kc(f).Get(ctx, client.ObjectKey{Namespace: f.Namespace, Name: member}, p); err != nil {
			return false, err.Error(), nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionFalse, string(c.Status), nil
			}
		}
		return false, "no Ready condition", nil
	}); err != nil {
		f.T.Fatal(err)
	}
}

// TestKubectlEtcdOnSecureAndMemoryClusters reads an operator-managed mTLS + auth cluster through
// the plugin (status says auth on, members, snapshot save), checks that no output carries the
// root password, and has pause refused on a Memory cluster (exit 3, rule memory-cluster-pause).
func TestKubectlEtcdOnSecureAndMemoryClusters(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Tools, framework.Security)
	requireOperator(f)
	const secure, memory = "plugins", "pluginmem"
	// canary is the root password: no output of the plugin may carry it.
	const canary = "e2e-Plugin-Pw-8q2z"
	createPasswordSecret(f, secure+"-root", canary)
	ec := newCluster(f, secure, 3)
	ec.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Managed: &etcdv1alpha2.ManagedTLS{}}
	ec.Spec.Auth = &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: secure + "-root"}}
	createCluster(f, ec)
	mem := newCluster(f, memory, 3)
	mem.Spec.Storage.Medium = etcdv1alpha2.StorageMediumMemory
	createCluster(f, mem)
	registerManagedAccess(f, secure)
	waitConverged(f, secure, 3, bootstrapTimeout)
	waitAuthLatched(f, secure)
	k := f.KubectlEtcd()

	var outputs []framework.PluginResult
	s := readPluginStatus(f, k, secure)
	if s.Cluster.Auth != "on" || len(s.Members) != 3 || s.leader() == "" {
		t.Fatalf("status -o json of the mTLS + auth cluster: auth %q, %d members, leader %q", s.Cluster.Auth, len(s.Members), s.leader())
	}
	outputs = append(outputs, runPlugin(f, k, 0, "status", secure), runPlugin(f, k, 0, "members", secure, "-o", "yaml"))
	// Pod mode derives TLS from the Pod: the server CA from its mounted Secret's ca.crt, the
	// client identity and the password from the flags, refused naming the flag without them.
	pod := s.follower()
	noCert := runPlugin(f, k, 2, "status", "--pod", pod, "--credentials-secret", secure+"-root")
	if !strings.Contains(noCert.Stderr, "--client-cert-secret") {
		t.Errorf("status --pod of an mTLS member without a client certificate does not name --client-cert-secret:\n%s", noCert)
	}
	outputs = append(outputs, noCert)
	outputs = append(outputs, requirePodMode(f, k, s, pod, "--client-cert-secret", secure+"-operator-client-tls", "--credentials-secret", secure+"-root")...)
	file := filepath.Join(t.TempDir(), "secure.db")
	outputs = append(outputs, runPlugin(f, k, 0, "snapshot", "save", secure, file))
	requireSHA256File(f, file)
	for _, r := range outputs {
		if strings.Contains(r.Stdout+r.Stderr, canary) {
			t.Fatalf("the root password appears in the plugin's output:\n%s", r)
		}
	}

	waitConverged(f, memory, 3, bootstrapTimeout)
	runPlugin(f, k, 0, "status", memory)
	r := runPlugin(f, k, 3, "pause", memory, "--apply", "--yes")
	if !strings.Contains(r.Stderr, "memory-cluster-pause") {
		t.Errorf("the refusal does not name memory-cluster-pause:\n%s", r)
	}
}
