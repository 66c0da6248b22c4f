package guard

import (
	"flag"
	"fmt"
	"io"
	"time"
)

// Subcommands and flags of the etcd-guard binary, used by the Pod builder (internal/desired) so
// that the Pod and the binary cannot disagree.
const (
	CommandInstall      = "install"
	CommandRun          = "run"
	FlagDataDir         = "data-dir"
	FlagMarker          = "marker"
	FlagDataExpected    = "data-expected"
	FlagTerminationLog  = "termination-log"
	FlagAwaitMembership = "await-membership"
	FlagRecoveryListen  = "recovery-listen"
	FlagForceFile       = "force-new-cluster-file"
	FlagForcedMarker    = "forced-marker"
	defaultPollInterval = time.Second
	// membershipPollInterval is how often a staged member asks its peers whether it was added
	// yet: the add usually comes within seconds, and each question is one small HTTP request.
	membershipPollInterval = 200 * time.Millisecond
	// forcePollInterval is how often the projected force-new-cluster annotation is read: a
	// cluster without quorum serves nothing until it is acted on (docs/design/quorum-recovery.md).
	forcePollInterval = 250 * time.Millisecond
)

// Main runs the etcd-guard command line and returns the process's exit code:
//
//	etcd-guard install DEST
//	etcd-guard run --data-dir DIR --marker FILE [--data-expected] [--await-membership] [--termination-log FILE] -- etcd FLAGS...
func Main(args []string, stderr io.Writer) int {
	if len(args) == 0 {
		_, _ = fmt.Fprintln(stderr, "usage: etcd-guard install DEST | etcd-guard run --data-dir DIR --marker FILE [--data-expected] -- etcd FLAGS...")
		return 2
	}
	switch args[0] {
	case CommandInstall:
		if len(args) != 2 {
			_, _ = fmt.Fprintln(stderr, "usage: etcd-guard install DEST")
			return 2
		}
		if err := Install(args[1]); err != nil {
			_, _ = fmt.Fprintf(stderr, "etcd-guard: %v\n", err)
			return 1
		}
		return 0
	case CommandRun:
		cfg := Config{PollInterval: defaultPollInterval, Stderr: stderr}
		fs := flag.NewFlagSet("etcd-guard run", flag.ContinueOnError)
		fs.SetOutput(stderr)
		fs.StringVar(&cfg.DataDir, FlagDataDir, "", "etcd's --data-dir")
		fs.StringVar(&cfg.Marker, FlagMarker, "", "file that records that this Pod has seen the data dir hold data")
		fs.BoolVar(&cfg.DataExpected, FlagDataExpected, false, "the member ran with this data dir before the Pod was created")
		fs.StringVar(&cfg.TerminationLog, FlagTerminationLog, "", "file that receives a refusal (the container's terminationMessagePath)")
		fs.BoolVar(&cfg.AwaitMembership, FlagAwaitMembership, false, "on an empty data dir, start etcd only once a peer lists this member (a staged join)")
		fs.StringVar(&cfg.RecoveryListen, FlagRecoveryListen, "", "address of the read-only log-tail endpoint for quorum-loss recovery")
		fs.StringVar(&cfg.ForceFile, FlagForceFile, "", "file holding the Pod's force-new-cluster annotation (downward API)")
		fs.StringVar(&cfg.ForcedMarker, FlagForcedMarker, "", "file that records the force-new-cluster request a start was forced for")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		if cfg.DataDir == "" || cfg.Marker == "" || (cfg.ForceFile != "" && cfg.ForcedMarker == "") {
			_, _ = fmt.Fprintln(stderr, "etcd-guard run: --data-dir and --marker are required, and --forced-marker with --force-new-cluster-file")
			return 2
		}
		cfg.Command = fs.Args()
		return Supervise(cfg)
	}
	_, _ = fmt.Fprintf(stderr, "etcd-guard: unknown command %q (want %s or %s)\n", args[0], CommandInstall, CommandRun)
	return 2
}
