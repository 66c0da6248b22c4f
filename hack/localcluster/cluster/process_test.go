package cluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/hack/binaries/pinned"
)

func TestRecipeFollowsFlagsEnvironmentAndConfigFiles(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(conf, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := process{name: "x", bin: "/bin/x", args: []string{"--a=1", "--b"}, env: []string{"E=1"}, configs: []string{conf}}
	digest := func(p process) string {
		t.Helper()
		r, err := p.recipe()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	want := digest(base)
	if again := digest(base); again != want {
		t.Fatalf("recipe is not stable: %s then %s", want, again)
	}
	variants := map[string]process{
		"another binary":    {name: "x", bin: "/bin/y", args: base.args, env: base.env, configs: base.configs},
		"another flag":      {name: "x", bin: base.bin, args: []string{"--a=2", "--b"}, env: base.env, configs: base.configs},
		"flags regrouped":   {name: "x", bin: base.bin, args: []string{"--a=1--b"}, env: base.env, configs: base.configs},
		"flag moved to env": {name: "x", bin: base.bin, args: []string{"--a=1"}, env: []string{"--b", "E=1"}, configs: base.configs},
		"another env":       {name: "x", bin: base.bin, args: base.args, env: []string{"E=2"}, configs: base.configs},
		"no config file":    {name: "x", bin: base.bin, args: base.args, env: base.env},
	}
	for name, p := range variants {
		if digest(p) == want {
			t.Errorf("%s: recipe unchanged", name)
		}
	}
	if err := os.WriteFile(conf, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	if digest(base) == want {
		t.Error("a changed configuration file left the recipe unchanged")
	}
	missing := base
	missing.configs = []string{filepath.Join(t.TempDir(), "absent")}
	if _, err := missing.recipe(); err == nil {
		t.Error("recipe of a process whose configuration file is missing: no error")
	}
}

// TestStaleReason runs a real process and asks whether it runs a recipe, the way up does for
// a component it finds running.
func TestStaleReason(t *testing.T) {
	t.Parallel()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	if sleep, err = filepath.EvalSymlinks(sleep); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sleep, "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	// Start returns once the child has begun its execve, and the kernel sets the new program's
	// arguments (what /proc/<pid>/cmdline reads) a moment after its binary (/proc/<pid>/exe): read
	// too early, cmdline is empty and the process looks started with other flags. up only ever
	// looks at components started long before.
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.Contains(string(b), "600") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/proc/%d/cmdline never showed the arguments: %q, %v", pid, b, err)
		}
		time.Sleep(5 * time.Millisecond)
	}

	l := layout{root: t.TempDir()}
	if err := os.MkdirAll(l.run(), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "conf")
	if err := os.WriteFile(conf, []byte("c"), 0o644); err != nil {
		t.Fatal(err)
	}
	same := process{name: "sleeper", bin: sleep, args: []string{"600"}}
	recipe, err := same.recipe()
	if err != nil {
		t.Fatal(err)
	}
	record := func(s string) {
		t.Helper()
		if err := os.WriteFile(l.recipeFile("sleeper"), []byte(s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(name string, p process, want string, stale bool) {
		t.Helper()
		got := l.staleReason(pid, p, want)
		if (got != "") != stale {
			t.Errorf("%s: staleReason = %q, want stale %t", name, got, stale)
		}
	}
	// No recipe recorded: a process started before recipes existed.
	check("same command line, no config file", same, recipe, false)
	check("other flags", process{name: "sleeper", bin: sleep, args: []string{"601"}}, recipe, true)
	check("other binary", process{name: "sleeper", bin: "/bin/other", args: same.args}, recipe, true)
	check("reads a config file", process{name: "sleeper", bin: sleep, args: same.args, configs: []string{conf}}, recipe, true)
	// Recorded.
	record(recipe)
	check("recorded recipe", same, recipe, false)
	record("something-else")
	check("recorded recipe differs", same, recipe, true)
}

func TestAPIServerWritesAnAuditLogOfWrites(t *testing.T) {
	t.Parallel()
	c := &Cluster{layout: layout{root: "/cache/localcluster"}}
	p := c.apiServerProcess()
	for _, want := range []string{
		"--audit-policy-file=/cache/localcluster/state/config/audit-policy.yaml",
		"--audit-log-path=/cache/localcluster/state/audit/audit.log",
		"--audit-log-maxsize=50",
		"--audit-log-maxbackup=3",
	} {
		if !slices.Contains(p.args, want) {
			t.Errorf("kube-apiserver args lack %s: %v", want, p.args)
		}
	}
	if !slices.Contains(p.configs, c.layout.auditPolicy()) {
		t.Errorf("the audit policy is not part of kube-apiserver's recipe: configs %v", p.configs)
	}
	var policy struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		OmitStages []string `json:"omitStages"`
		Rules      []struct {
			Level string   `json:"level"`
			Verbs []string `json:"verbs"`
		} `json:"rules"`
	}
	if err := yaml.UnmarshalStrict([]byte(auditPolicy), &policy); err != nil {
		t.Fatalf("audit policy: %v", err)
	}
	if policy.APIVersion != "audit.k8s.io/v1" || policy.Kind != "Policy" || !slices.Equal(policy.OmitStages, []string{"RequestReceived"}) {
		t.Errorf("audit policy header: %+v", policy)
	}
	if len(policy.Rules) != 2 ||
		policy.Rules[0].Level != "Metadata" ||
		!slices.Equal(policy.Rules[0].Verbs, []string{"create", "update", "patch", "delete", "deletecollection"}) ||
		policy.Rules[1].Level != "None" || len(policy.Rules[1].Verbs) != 0 {
		t.Errorf("audit policy rules: want Metadata for every write verb, then None for the rest; got %+v", policy.Rules)
	}
}

func TestCorefileLogsEveryQuery(t *testing.T) {
	t.Parallel()
	c := &Cluster{layout: layout{root: "/cache/localcluster"}}
	blocks := strings.Split(c.corefile(), "\n}\n")
	servers := 0
	for _, b := range blocks {
		if !strings.Contains(b, "bind ") {
			continue
		}
		servers++
		if !strings.Contains(b, "\n    log\n") {
			t.Errorf("server block without the log plugin:\n%s", b)
		}
	}
	if servers != 2 {
		t.Errorf("found %d server blocks, want 2 (cluster domain and the NXDOMAIN catch-all)", servers)
	}
	if p := c.coreDNSProcess(); !slices.Contains(p.configs, c.layout.config("Corefile")) {
		t.Errorf("the Corefile is not part of CoreDNS's recipe: configs %v", p.configs)
	}
}

func TestRotateCoreDNSLog(t *testing.T) {
	t.Parallel()
	c := &Cluster{layout: layout{root: t.TempDir()}, log: io.Discard}
	path := c.layout.logFile(coreDNSName)
	if err := c.rotateCoreDNSLog(t.Context()); err != nil {
		t.Fatalf("no log yet: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".1", []byte("older"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("small"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.rotateCoreDNSLog(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("a small log was moved: %v", err)
	}
	// Sparse: the size is what counts.
	if err := os.Truncate(path, CoreDNSLogMaxBytes); err != nil {
		t.Fatal(err)
	}
	if err := c.rotateCoreDNSLog(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a full log stayed in place: %v", err)
	}
	if st, err := os.Stat(path + ".1"); err != nil || st.Size() != CoreDNSLogMaxBytes {
		t.Errorf("the full log is not coredns.log.1: %v", err)
	}
}

// TestCorefileNamesOnlyLinkedPlugins guards the trimmed CoreDNS build: a directive the binary
// does not link stops CoreDNS at start ("unknown directive"), which would surface only as a
// cluster whose DNS never answers.
func TestCorefileNamesOnlyLinkedPlugins(t *testing.T) {
	t.Parallel()
	c := &Cluster{layout: layout{root: "/cache/localcluster"}}
	for line := range strings.SplitSeq(c.corefile(), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] == "}" || strings.HasSuffix(line, "{") && !strings.HasPrefix(line, " ") {
			continue // a blank line, a block's end, or a server block's zones
		}
		if !strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "        ") {
			continue // only a server block's own directives, not a plugin's options
		}
		if !slices.Contains(pinned.CoreDNSPlugins, fields[0]) {
			t.Errorf("the Corefile uses plugin %q, which the CoreDNS build does not link; add it to pinned.CoreDNSPlugins", fields[0])
		}
	}
}
