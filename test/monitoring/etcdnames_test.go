package monitoring

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
)

// TestEtcdExportsTheListedMetrics: a real etcd of every pinned minor (ETCD_BIN_DIRS) exports
// every name in etcdMetricNames on /metrics right after it starts (a histogram as its _bucket
// series), so the dashboard never reads a metric etcd does not have.
func TestEtcdExportsTheListedMetrics(t *testing.T) {
	t.Parallel()
	dirs := etcdproc.BinDirs()
	if len(dirs) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal(etcdproc.ErrNoBinDirs)
		}
		t.Skip(etcdproc.ErrNoBinDirs)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			c := etcdproc.StartForTest(ctx, t, etcdproc.Options{Binary: filepath.Join(dir, "etcd")})
			m := c.Members[0]
			base := m.MetricsURL
			if base == "" {
				base = m.ClientURL
			}
			exported := scrape(ctx, t, base+"/metrics")
			for _, name := range etcdMetricNames {
				if !exported[name] && !exported[name+"_bucket"] {
					t.Errorf("etcd in %s does not export %s", dir, name)
				}
			}
		})
	}
}

// scrape returns the names of the series on a Prometheus text endpoint.
func scrape(ctx context.Context, tb testing.TB, url string) map[string]bool {
	tb.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET %s: %s", url, resp.Status)
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return names
}
