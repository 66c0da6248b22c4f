package promserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func TestRenderConfig(t *testing.T) {
	t.Parallel()
	out, err := renderConfig("/d", 2*time.Second, []Job{{Name: "op", HonorLabels: true}, {Name: "members"}}, []string{"/r.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	var c config
	if err := yaml.Unmarshal(out, &c); err != nil {
		t.Fatal(err)
	}
	if c.Global.ScrapeInterval != "2s" || c.Global.EvaluationInterval != "2s" || len(c.RuleFiles) != 1 || len(c.ScrapeConfigs) != 2 {
		t.Fatalf("config = %s", out)
	}
	op, members := c.ScrapeConfigs[0], c.ScrapeConfigs[1]
	if !op.HonorLabels || members.HonorLabels || op.FileSD[0].Files[0] != "/d/targets/op.json" {
		t.Errorf("scrape configs = %+v", c.ScrapeConfigs)
	}
	for _, bad := range []struct {
		interval time.Duration
		jobs     []Job
	}{
		{1500 * time.Millisecond, nil},
		{0, nil},
		{time.Second, []Job{{Name: "a"}, {Name: "a"}}},
		{time.Second, []Job{{}}},
	} {
		if _, err := renderConfig("/d", bad.interval, bad.jobs, nil); err == nil {
			t.Errorf("renderConfig(%s, %+v) succeeded, want an error", bad.interval, bad.jobs)
		}
	}
}

// TestServerScrapesWhatTheTestWrites runs the real server: a job starts without targets, gets
// the server itself as a target with the labels a PodMonitor would give, and its series carry
// them; a rule file is evaluated; a bad expression is an error with Prometheus's message.
func TestServerScrapesWhatTheTestWrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte("groups:\n- name: g\n  rules:\n  - alert: Always\n    expr: vector(1) > 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := StartForTest(t, Options{Jobs: []Job{{Name: "self"}}, RuleFiles: []string{rules}})
	ctx := t.Context()
	if v, err := s.Query(ctx, `up{job="self"}`, time.Now()); err != nil || len(v) != 0 {
		t.Fatalf("before SetTargets: %v, %v; want no series", v, err)
	}
	labels := map[string]string{"namespace": "ns", "cluster": "c", "pod": "c-0"}
	if err := s.SetTargets("self", []TargetGroup{{Targets: []string{strings.TrimPrefix(s.URL, "http://")}, Labels: labels}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the server scrapes itself with the target's labels", func(ctx context.Context) bool {
		v, err := s.Query(ctx, `up{job="self",namespace="ns",cluster="c",pod="c-0"} == 1`, time.Now())
		return err == nil && len(v) == 1
	})
	waitFor(t, "the rule evaluated", func(ctx context.Context) bool {
		groups, err := s.Rules(ctx)
		return err == nil && len(groups) == 1 && groups[0].Rules[0].Health == "ok" && groups[0].Rules[0].State != "inactive"
	})
	m, err := s.QueryRange(ctx, `up{job="self"}`, time.Now().Add(-time.Minute), time.Now(), time.Second)
	if err != nil || len(m) != 1 || len(m[0].Values) == 0 {
		t.Errorf("range query: %v, %v; want one series with samples", m, err)
	}
	if _, err := s.Query(ctx, `rate(up[`, time.Now()); err == nil || !strings.Contains(err.Error(), "bad_data") {
		t.Errorf("bad expression: %v, want Prometheus's bad_data error", err)
	}
	targets, err := s.Targets(ctx)
	if err != nil || len(targets) != 1 || targets[0].Health != "up" {
		t.Errorf("targets = %+v, %v; want the one target up", targets, err)
	}
}

func waitFor(t *testing.T, what string, cond func(context.Context) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for !cond(ctx) {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
