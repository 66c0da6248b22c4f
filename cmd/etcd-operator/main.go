// Command etcd-operator runs the controllers that manage etcd clusters on Kubernetes. All wiring
// lives in internal/operator; this file only turns the outcome into an exit code: 0 after a requested
// stop, 1 when the operator fails, 2 for invalid flags or environment variables.
//
// `etcd-operator snapshot-agent` is the program snapshot Jobs run instead (internal/snapshotagent,
// docs/backup-restore.md), so that a Job needs no image but the operator's;
// `etcd-operator restore-agent` is what a new cluster's seed runs to restore its data dir from a
// snapshot (internal/restoreagent), copied from this image into the etcd image's Pod.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcd-operator/etcd-operator/internal/operator"
	"github.com/etcd-operator/etcd-operator/internal/restoreagent"
	"github.com/etcd-operator/etcd-operator/internal/snapshotagent"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == snapshotagent.Command {
		os.Exit(snapshotagent.Main(os.Args[2:], os.LookupEnv, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == restoreagent.Command {
		os.Exit(restoreagent.Main(os.Args[2:], os.LookupEnv, os.Stderr))
	}
	opts, err := operator.ParseOptions(os.Args[1:], os.LookupEnv)
	if errors.Is(err, flag.ErrHelp) {
		operator.PrintUsage(os.Stdout)
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd-operator: %v\n", err)
		os.Exit(2)
	}

	logger := operator.NewLogger(opts.Log, os.Stderr)
	// The first SIGTERM or SIGINT cancels ctx and starts a graceful stop; a second one exits at once.
	ctx := logr.NewContext(ctrl.SetupSignalHandler(), logger)
	// client-go logs through klog (the event recorder among others); route it into the same JSON
	// stream, where what the stop itself cancels is not an error (operator.StopAwareLogger).
	global := operator.StopAwareLogger(logger, ctx.Done())
	ctrl.SetLogger(global)
	klog.SetLogger(global)

	if err := operator.Run(ctx, opts); err != nil {
		logger.Error(err, "etcd-operator failed")
		os.Exit(1)
	}
}
