package pinned

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// PromtoolBinary is the name of promtool in the cache.
const PromtoolBinary = "promtool"

// PrometheusBinary is the name of the Prometheus server in the cache; it comes from the same
// module release as promtool, so PROMETHEUS_VERSION is the one pin of both.
const PrometheusBinary = "prometheus"

// prometheusModule is the Go module that holds promtool and the server.
const prometheusModule = "github.com/prometheus/prometheus"

// promtoolPackage is promtool's main package.
const promtoolPackage = prometheusModule + "/cmd/promtool"

// prometheusPackage is the server's main package.
const prometheusPackage = prometheusModule + "/cmd/prometheus"

// promtoolTags drop every service discovery plugin but the file and HTTP ones (upstream's
// plugins/*.go are guarded by these tags): `check rules` and `test rules` use none of them, and
// the cloud providers' SDKs they link would be most of a cold build. promtool's own `check
// service-discovery` still links Kubernetes SD, which it imports directly. The server of e2e
// scrapes targets the test writes to a file_sd file (docs/monitoring.md, "The e2e Prometheus"),
// so it takes the same tags, and the same recipe keeps the two binaries one build.
const promtoolTags = "remove_all_sd"

// PrometheusModuleVersion maps a Prometheus 3 release to the version of its Go module: upstream
// publishes 3.<minor>.<patch> as v0.3<minor, two digits>.<patch> (3.16.0 is v0.316.0).
func PrometheusModuleVersion(release string) (string, error) {
	if !releasePattern.MatchString(release) {
		return "", fmt.Errorf("prometheus release %q: want 3.<minor>.<patch> without a v prefix", release)
	}
	parts := strings.Split(release, ".")
	minor, err := strconv.Atoi(parts[1])
	if parts[0] != "3" || err != nil || minor > 99 {
		return "", fmt.Errorf("prometheus release %q: only 3.<minor>.<patch> with a minor below 100 maps to a module version", release)
	}
	return fmt.Sprintf("v0.3%02d.%s", minor, parts[2]), nil
}

func (b *Builder) promtoolSet() (binarySet, error) {
	release := b.versions.Prometheus
	modVersion, err := PrometheusModuleVersion(release)
	if err != nil {
		return binarySet{}, err
	}
	m := Module{Path: prometheusModule, Version: modVersion}
	return binarySet{
		name:     "prometheus-v" + release,
		packages: map[string]string{PromtoolBinary: promtoolPackage, PrometheusBinary: prometheusPackage},
		// -s -w: no symbol table or DWARF, which only a debugger of promtool would read; the
		// version is what `promtool --version` prints (upstream's release builds set it the same
		// way).
		ldflags: "-s -w -X github.com/prometheus/common/version.Version=" + release,
		tags:    promtoolTags,
		goMod: func(context.Context) ([]byte, error) {
			return plainToolsGoMod(toolsGoVersion, m), nil
		},
	}, nil
}

// Promtool builds (or reuses) promtool and returns its folder.
func (b *Builder) Promtool(ctx context.Context) (string, error) {
	set, err := b.promtoolSet()
	if err != nil {
		return "", err
	}
	return b.ensure(ctx, set, []string{PromtoolBinary})
}

// Prometheus builds (or reuses) the Prometheus server of the e2e monitoring test and returns
// its folder (the same folder as promtool's).
func (b *Builder) Prometheus(ctx context.Context) (string, error) {
	set, err := b.promtoolSet()
	if err != nil {
		return "", err
	}
	return b.ensure(ctx, set, []string{PrometheusBinary})
}
