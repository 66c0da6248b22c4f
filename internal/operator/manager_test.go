package operator

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func TestManagerOptions(t *testing.T) {
	t.Parallel()
	scheme, err := NewScheme()
	if err != nil {
		t.Fatalf("NewScheme() error = %v", err)
	}
	tests := []struct {
		name           string
		opts           Options
		wantNamespaces map[string]cache.Config
	}{
		{name: "all namespaces", opts: defaultOptions()},
		{
			name: "watched namespaces",
			opts: func() Options {
				o := defaultOptions()
				o.WatchNamespaces = []string{"team-a", "team-b"}
				return o
			}(),
			wantNamespaces: map[string]cache.Config{"team-a": {}, "team-b": {}},
		},
	}
	log := StopAwareLogger(NewLogger(LogOptions{}, io.Discard), nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := managerOptions(tt.opts, scheme, "ops", log)
			if got.LeaderElectionID != "aa20b3a9.etcd-operator.cozystack.io" {
				t.Errorf("LeaderElectionID = %q, want the Lease name of docs/api.md", got.LeaderElectionID)
			}
			if !got.LeaderElection || got.LeaderElectionNamespace != "ops" || !got.LeaderElectionReleaseOnCancel {
				t.Errorf("leader election = %t in %q, release on cancel %t; want true in \"ops\", true",
					got.LeaderElection, got.LeaderElectionNamespace, got.LeaderElectionReleaseOnCancel)
			}
			if diff := cmp.Diff(tt.wantNamespaces, got.Cache.DefaultNamespaces); diff != "" {
				t.Errorf("Cache.DefaultNamespaces mismatch (-want +got):\n%s", diff)
			}
			if got.Controller.MaxConcurrentReconciles != DefaultMaxConcurrentReconciles {
				t.Errorf("MaxConcurrentReconciles = %d, want %d", got.Controller.MaxConcurrentReconciles, DefaultMaxConcurrentReconciles)
			}
			if got.HealthProbeBindAddress != ":8081" || got.Metrics.BindAddress != ":8080" || got.Metrics.SecureServing {
				t.Errorf("probe %q, metrics %q (secure %t); want :8081, plain :8080",
					got.HealthProbeBindAddress, got.Metrics.BindAddress, got.Metrics.SecureServing)
			}
			if got.GracefulShutdownTimeout == nil || *got.GracefulShutdownTimeout != DefaultGracefulShutdownTimeout {
				t.Errorf("GracefulShutdownTimeout = %v, want %v", got.GracefulShutdownTimeout, DefaultGracefulShutdownTimeout)
			}
			if got.Logger != log {
				t.Error("Logger is not the one passed in")
			}
			if got.Scheme != scheme {
				t.Error("Scheme is not the one passed in")
			}
		})
	}
}

func TestLeaderElectionNamespace(t *testing.T) {
	t.Parallel()
	fileWith := func(content string) func(string) ([]byte, error) {
		return func(string) ([]byte, error) { return []byte(content), nil }
	}
	fileError := func(err error) func(string) ([]byte, error) {
		return func(string) ([]byte, error) { return nil, err }
	}
	errDenied := errors.New("permission denied")
	tests := []struct {
		name     string
		opts     Options
		readFile func(string) ([]byte, error)
		want     string
		wantErr  error
	}{
		{name: "flag wins", opts: Options{LeaderElection: true, LeaderElectionNamespace: "ops"}, readFile: fileWith("pod-ns"), want: "ops"},
		{name: "pod namespace", opts: Options{LeaderElection: true}, readFile: fileWith("pod-ns\n"), want: "pod-ns"},
		{name: "leader election off needs no namespace", opts: Options{}, readFile: fileError(fs.ErrNotExist), want: ""},
		{name: "outside a cluster", opts: Options{LeaderElection: true}, readFile: fileError(fs.ErrNotExist), wantErr: errOutsideCluster},
		{name: "unreadable file", opts: Options{LeaderElection: true}, readFile: fileError(errDenied), wantErr: errDenied},
		{name: "garbage in file", opts: Options{LeaderElection: true}, readFile: fileWith("Not A Namespace"), wantErr: errInvalidPodNamespace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := leaderElectionNamespace(tt.opts, tt.readFile)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("leaderElectionNamespace() error = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("leaderElectionNamespace() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestLeaderElectionNamespaceOutsideClusterMessage checks that the error tells the user which flag
// and environment variable to set, since that is its whole purpose.
func TestLeaderElectionNamespaceOutsideClusterMessage(t *testing.T) {
	t.Parallel()
	_, err := leaderElectionNamespace(Options{LeaderElection: true}, func(string) ([]byte, error) {
		return nil, fmt.Errorf("open: %w", fs.ErrNotExist)
	})
	for _, want := range []string{"--leader-election-namespace", "ETCD_OPERATOR_LEADER_ELECTION_NAMESPACE", "--leader-elect=false"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %s", err, want)
		}
	}
}

func TestNewScheme(t *testing.T) {
	t.Parallel()
	scheme, err := NewScheme()
	if err != nil {
		t.Fatalf("NewScheme() error = %v", err)
	}
	if !scheme.IsVersionRegistered(etcdv1alpha2.GroupVersion) {
		t.Errorf("scheme lacks %s", etcdv1alpha2.GroupVersion)
	}
	if !scheme.IsVersionRegistered(corev1.SchemeGroupVersion) {
		t.Errorf("scheme lacks %s", corev1.SchemeGroupVersion)
	}
}

func TestCachesSynced(t *testing.T) {
	t.Parallel()
	for _, synced := range []bool{true, false} {
		t.Run(fmt.Sprint("synced=", synced), func(t *testing.T) {
			t.Parallel()
			check := cachesSynced(&informertest.FakeInformers{Synced: &synced})
			start := time.Now()
			err := check(httptest.NewRequestWithContext(t.Context(), "GET", "/readyz", nil))
			if (err == nil) != synced {
				t.Errorf("check() error = %v with synced = %t", err, synced)
			}
			if elapsed := time.Since(start); elapsed > 10*readyzCacheSyncWait {
				t.Errorf("check() took %v, want it bounded by about %v", elapsed, readyzCacheSyncWait)
			}
		})
	}
}
