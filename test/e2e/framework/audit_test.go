package framework

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// auditLine is an audit event the way kube-apiserver writes it at Metadata level.
func auditLine(id, stage, verb, user, resource, sub, group, ns, name, ts string) string {
	return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"` + id +
		`","stage":"` + stage + `","requestURI":"/apis/x","verb":"` + verb +
		`","user":{"username":"` + user + `","groups":["system:serviceaccounts"],"extra":{"authentication.kubernetes.io/pod-name":["op-1"]}},` +
		`"sourceIPs":["10.244.1.19"],"userAgent":"etcd-operator/v0.0.0",` +
		`"objectRef":{"resource":"` + resource + `","namespace":"` + ns + `","name":"` + name + `","apiGroup":"` + group + `","apiVersion":"v1","subresource":"` + sub + `"},` +
		`"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"` + ts + `","stageTimestamp":"` + ts + `"}`
}

func TestReadAuditEvents(t *testing.T) {
	t.Parallel()
	op := ServiceAccountUsername("etcd-operator-system", "etcd-operator")
	if op != "system:serviceaccount:etcd-operator-system:etcd-operator" {
		t.Fatalf("ServiceAccountUsername = %q", op)
	}
	dir := t.TempDir()
	from := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	to := from.Add(5 * time.Minute)
	at := func(d time.Duration) string { return from.Add(d).Format("2006-01-02T15:04:05.000000Z") }
	oldest := filepath.Join(dir, "audit-2026-11-30T03-00-00.000.log") // rotated before the window
	backup := filepath.Join(dir, "audit-2026-11-30T04-02-00.000.log")
	current := filepath.Join(dir, "audit.log")
	files := map[string]string{
		oldest: auditLine("z", "ResponseComplete", "patch", op, "pods", "", "", "ns", "ancient", at(-time.Hour)) + "\n",
		backup: strings.Join([]string{
			auditLine("a", "ResponseComplete", "update", op, "leases", "", "coordination.k8s.io", "etcd-operator-system", "lease", at(-time.Second)),
			auditLine("b", "ResponseComplete", "update", op, "leases", "", "coordination.k8s.io", "etcd-operator-system", "lease", at(time.Second)),
			auditLine("c", "ResponseComplete", "patch", "system:node:eo-node-0", "nodes", "status", "", "", "eo-node-0", at(2*time.Second)),
		}, "\n") + "\n",
		current: strings.Join([]string{
			auditLine("d", "ResponseStarted", "create", op, "pods", "exec", "", "ns", "m-0", at(3*time.Second)),
			auditLine("d", "ResponseComplete", "create", op, "pods", "exec", "", "ns", "m-0", at(3*time.Second)),
			auditLine("e", "ResponseComplete", "patch", op, "etcdclusters", "status", "etcd-operator.cozystack.io", "ns", "idle", at(4*time.Minute)),
			auditLine("f", "ResponseComplete", "patch", op, "etcdclusters", "status", "etcd-operator.cozystack.io", "ns", "idle", at(5*time.Minute)),
			// Being written: not a whole line yet.
			`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Meta`,
		}, "\n"),
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Rotation keeps modification times; the oldest file was last written before the window.
	if err := os.Chtimes(oldest, from.Add(-time.Hour), from.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	events, err := ReadAuditEvents([]string{oldest, backup, current}, from, to, op)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		got = append(got, e.AuditID+" "+e.Stage+" "+e.Describe())
	}
	want := []string{
		"b ResponseComplete update leases.coordination.k8s.io etcd-operator-system/lease → 200",
		"d ResponseComplete create pods/exec ns/m-0 → 200",
		"e ResponseComplete patch etcdclusters/status.etcd-operator.cozystack.io ns/idle → 200",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events in the window (-want +got):\n%s", diff)
	}
	if events[0].Namespace() != "etcd-operator-system" || events[0].User.Extra["authentication.kubernetes.io/pod-name"][0] != "op-1" {
		t.Errorf("event fields: %+v", events[0])
	}

	// A broken line that is not the last one is an error, not silently skipped.
	broken := filepath.Join(dir, "broken.log")
	content := `{"user":{"username":"` + op + `"}, broken` + "\n" + auditLine("g", "ResponseComplete", "patch", op, "pods", "", "", "ns", "x", at(time.Second)) + "\n"
	if err := os.WriteFile(broken, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAuditEvents([]string{broken}, from, to, op); err == nil {
		t.Error("a malformed line in the middle of the log was skipped silently")
	}
}
