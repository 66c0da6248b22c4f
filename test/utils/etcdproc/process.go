package etcdproc

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
)

// NewProcess describes a member started with exactly the given flags, for tests that run etcd
// the way something else renders it (a fake kubelet running the operator's Pods, say). The
// flags must name the data dir, listeners and advertised URLs themselves; dataDir, clientURL and
// metricsURL are only recorded for WipeDataDir and the health checks. Start runs it; the binary
// is FindBinary's. logPath's folder is created.
func NewProcess(name, dataDir, clientURL, metricsURL, logPath string, args []string) (*Member, error) {
	bin, err := FindBinary()
	if err != nil {
		return nil, err
	}
	if name == "" || dataDir == "" || logPath == "" {
		return nil, errors.New("etcdproc: NewProcess needs a name, a data dir and a log path")
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
		return nil, err
	}
	return &Member{Name: name, ClientURL: clientURL, MetricsURL: metricsURL, DataDir: dataDir, LogPath: logPath,
		binary: bin, args: slices.Clone(args)}, nil
}
