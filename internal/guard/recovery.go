package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Quorum-loss recovery in the guard (docs/design/quorum-recovery.md). The operator cannot read
// a member's WAL through etcd's API, and a Memory member's data lives only as long as its Pod,
// so the guard does both halves in the Pod: it serves the log tail over HTTP, and it restarts
// etcd once with --force-new-cluster when the Pod's force-new-cluster annotation, which the
// kubelet projects into a file, names this member's log exactly as the operator read it.

// LogTailPath is the guard's HTTP path for the log tail.
const LogTailPath = "/log-tail"

// LogTailAnswer is the JSON the log-tail endpoint returns; IDs in etcd's hex form.
type LogTailAnswer struct {
	MemberID  string `json:"memberID"`
	ClusterID string `json:"clusterID"`
	Term      uint64 `json:"term"`
	Index     uint64 `json:"index"`
}

// Answer renders a tail for the endpoint.
func (t LogTail) Answer() LogTailAnswer {
	return LogTailAnswer{MemberID: hexID(t.MemberID), ClusterID: hexID(t.ClusterID), Term: t.Term, Index: t.Index}
}

// ForceValue is the force-new-cluster request that names this tail:
// <clusterID>/<memberID>/<term>/<index>. The guard acts only on a request equal to the value of
// its own log as it reads it, so a request meant for another member, another cluster, or a log
// that moved since the operator read it, does nothing.
func (t LogTail) ForceValue() string {
	return fmt.Sprintf("%s/%s/%d/%d", hexID(t.ClusterID), hexID(t.MemberID), t.Term, t.Index)
}

// ForceValue is LogTailAnswer's request value; it matches LogTail.ForceValue.
func (a LogTailAnswer) ForceValue() string {
	return fmt.Sprintf("%s/%s/%d/%d", a.ClusterID, a.MemberID, a.Term, a.Index)
}

func hexID(id uint64) string { return strconv.FormatUint(id, 16) }

// Covers reports whether request (a ForceValue) names this member and cluster, and a log
// position this log has reached: the same last entry, or an earlier one by raft's order (higher
// term first, then higher index). A log that moved on since the operator read it is only more up
// to date than the other survivors' were: a survivor that still led for a moment after the
// quorum went may append an entry it can never commit. A log behind the request, or another
// member's, is refused.
func (t LogTail) Covers(request string) bool {
	parts := strings.Split(request, "/")
	if len(parts) != 4 || parts[0] != hexID(t.ClusterID) || parts[1] != hexID(t.MemberID) {
		return false
	}
	term, err1 := strconv.ParseUint(parts[2], 10, 64)
	index, err2 := strconv.ParseUint(parts[3], 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	return t.Term > term || (t.Term == term && t.Index >= index)
}

// serveLogTail serves the log tail until ctx ends. Read-only: it reports positions and IDs,
// never data.
func serveLogTail(ctx context.Context, cfg Config) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+LogTailPath, func(w http.ResponseWriter, _ *http.Request) {
		tail, err := ReadLogTail(cfg.DataDir)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(tail.Answer())
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", cfg.RecoveryListen)
	if err != nil {
		_, _ = fmt.Fprintf(cfg.Stderr, "etcd-guard: the log-tail endpoint cannot listen on %s: %v\n", cfg.RecoveryListen, err)
		return
	}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	_ = srv.Serve(ln)
}

// pendingForce returns the force-new-cluster request to act on now, or "": one is projected
// into ForceFile, it was never acted on in this Pod (ForcedMarker), and it names this member
// and cluster with a log position this member's log has reached (Covers). A request that does
// not match is reported once per value.
func pendingForce(cfg Config, reported *string) string {
	if cfg.ForceFile == "" {
		return ""
	}
	b, err := os.ReadFile(cfg.ForceFile)
	if err != nil {
		return ""
	}
	want := strings.TrimSpace(string(b))
	if want == "" {
		return ""
	}
	if done, err := os.ReadFile(cfg.ForcedMarker); err == nil && strings.TrimSpace(string(done)) == want {
		return ""
	}
	tail, err := ReadLogTail(cfg.DataDir)
	if err == nil && tail.Covers(want) {
		return want
	}
	if *reported != want {
		*reported = want
		have := "unreadable"
		if err == nil {
			have = tail.ForceValue()
		}
		_, _ = fmt.Fprintf(cfg.Stderr, "etcd-guard: ignoring force-new-cluster request %q: this member's log is %s\n", want, have)
	}
	return ""
}

// recordForced writes the request being acted on before etcd starts with the flag: the flag is
// used for one start only, even if that start fails and the container restarts.
func recordForced(cfg Config, value string) error {
	if err := os.WriteFile(cfg.ForcedMarker, []byte(value+"\n"), 0o600); err != nil {
		return fmt.Errorf("recording the force-new-cluster start: %w", err)
	}
	return nil
}

// watchForce polls for a force request while etcd runs and sends the first one that matches.
func watchForce(ctx context.Context, cfg Config, out chan<- string) {
	interval := cfg.ForcePollInterval
	if interval <= 0 {
		interval = forcePollInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var reported string
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if v := pendingForce(cfg, &reported); v != "" {
				select {
				case out <- v:
				case <-ctx.Done():
				}
				return
			}
		}
	}
}

// forcedArgs are etcd's flags for the one forced start: --force-new-cluster added, and the
// initial corruption check turned off. That check compares the member's hash with every peer of
// the membership on disk before serving, and the forced start drops exactly those peers: each
// one that is gone costs the check its request timeout (16 s for three, measured on the local
// cluster) while the cluster still serves nothing (docs/design/quorum-recovery.md). The check
// runs again at the member's next start.
func forcedArgs(args []string) []string {
	out := make([]string, 0, len(args)+1)
	for _, a := range args {
		switch {
		case a == "--experimental-initial-corrupt-check" || a == "--experimental-initial-corrupt-check=true":
			a = "--experimental-initial-corrupt-check=false"
		case strings.HasPrefix(a, "--feature-gates="):
			a = strings.Replace(a, "InitialCorruptCheck=true", "InitialCorruptCheck=false", 1)
		}
		out = append(out, a)
	}
	return append(out, "--force-new-cluster")
}
