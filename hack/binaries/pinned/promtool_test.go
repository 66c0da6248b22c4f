package pinned

import (
	"strings"
	"testing"
)

func TestPrometheusModuleVersion(t *testing.T) {
	t.Parallel()
	for release, want := range map[string]string{
		"3.16.0": "v0.316.0",
		"3.5.2":  "v0.305.2",
		"3.0.1":  "v0.300.1",
	} {
		got, err := PrometheusModuleVersion(release)
		if err != nil || got != want {
			t.Errorf("PrometheusModuleVersion(%q) = %q, %v; want %q", release, got, err, want)
		}
	}
	for _, bad := range []string{"2.53.0", "v3.16.0", "3.100.0", "3.16"} {
		if got, err := PrometheusModuleVersion(bad); err == nil {
			t.Errorf("PrometheusModuleVersion(%q) = %q, want an error", bad, got)
		}
	}
}

// The build recipe names the tags, so a change of tags rebuilds; sets without tags keep the
// recipe they always had (no rebuild of cached binaries).
func TestPromtoolSet(t *testing.T) {
	t.Parallel()
	b := NewBuilder(t.TempDir(), Versions{Prometheus: "3.16.0"}, nil)
	set, err := b.promtoolSet()
	if err != nil {
		t.Fatal(err)
	}
	if set.name != "prometheus-v3.16.0" || set.packages[PromtoolBinary] != promtoolPackage || set.tags != promtoolTags {
		t.Errorf("promtool set = %+v", set)
	}
	// The server comes from the same release, in the same folder, with the same recipe but its
	// package: one pin, one tools module.
	if set.packages[PrometheusBinary] != prometheusPackage {
		t.Errorf("prometheus package = %q, want %q", set.packages[PrometheusBinary], prometheusPackage)
	}
	if r := recipeOf(set, PrometheusBinary, "go1.26.8"); !strings.Contains(r, "package="+prometheusPackage+"\n") || !strings.Contains(r, "tags=remove_all_sd\n") {
		t.Errorf("prometheus recipe %q", r)
	}
	goMod, err := set.goMod(t.Context())
	if err != nil || !strings.Contains(string(goMod), "github.com/prometheus/prometheus v0.316.0") {
		t.Errorf("tools go.mod = %s, %v; want it to require prometheus v0.316.0", goMod, err)
	}
	if r := recipeOf(set, "promtool", "go1.26.8"); !strings.Contains(r, "tags=remove_all_sd\n") {
		t.Errorf("recipe %q does not name the tags", r)
	}
	if r := recipeOf(b.coreDNSSet(), "coredns", "go1.26.8"); strings.Contains(r, "tags=") {
		t.Errorf("recipe of a set without tags changed: %q", r)
	}
}
