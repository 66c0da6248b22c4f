package operator_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	operatorcmd "github.com/etcd-operator/etcd-operator/internal/operator"
)

// runInProcessEnv makes the test binary run the operator in its own process (runInProcess)
// instead of the tests. TestMain checks it before anything else.
const runInProcessEnv = "OPERATOR_TEST_RUN_IN_PROCESS"

// holdAtEnv names a failpoint (internal/failpoint) at which runInProcess holds the pass that hits
// it until the stop is requested, then lets it go on with its context cancelled: a stop in the
// middle of a pass, every time.
const holdAtEnv = "OPERATOR_TEST_HOLD_AT"

// holdingMessage is what runInProcess logs when a pass reaches the held failpoint.
const holdingMessage = "Holding a pass at a failpoint until the stop"

const (
	// managerStopFrame names the functions of controller-runtime's stop sequence; a goroutine
	// whose stack holds it is still stopping the manager (and may still log).
	managerStopFrame = "manager.(*controllerManager).engageStopProcedure"
	// managerStopWait bounds the wait for those goroutines after operator.Run returned.
	managerStopWait = 10 * time.Second
	// managerStopPoll is how often the goroutines are listed meanwhile.
	managerStopPoll = 10 * time.Millisecond
)

// runInProcess is cmd/etcd-operator's main (keep the two in step) with one difference (and, with holdAtEnv, a failpoint
// armed): after operator.Run returns it waits until the goroutines of controller-runtime's stop
// sequence have ended before the process exits. The binary exits at once, and whether a record those goroutines were about to write
// makes it to the log is then a race between them and the exit; here every such record is
// written, so a test of a clean stop sees what the stop logs, every time.
func runInProcess() int {
	opts, err := operatorcmd.ParseOptions(os.Args[1:], os.LookupEnv)
	if errors.Is(err, flag.ErrHelp) {
		operatorcmd.PrintUsage(os.Stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd-operator: %v\n", err)
		return 2
	}
	logger := operatorcmd.NewLogger(opts.Log, os.Stderr)
	ctx := logr.NewContext(ctrl.SetupSignalHandler(), logger)
	global := operatorcmd.StopAwareLogger(logger, ctx.Done())
	ctrl.SetLogger(global)
	klog.SetLogger(global)
	if step := os.Getenv(holdAtEnv); step != "" {
		failpoint.SetAction(step, func(string) {
			logger.Info(holdingMessage, "failpoint", step)
			<-ctx.Done()
		})
	}
	err = operatorcmd.Run(ctx, opts)
	if werr := waitForManagerStop(); werr != nil {
		logger.Error(werr, "Waiting for the manager's stop sequence")
	}
	if err != nil {
		logger.Error(err, "etcd-operator failed")
		return 1
	}
	return 0
}

// waitForManagerStop waits until no goroutine runs controller-runtime's stop sequence.
func waitForManagerStop() error {
	deadline := time.Now().Add(managerStopWait)
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		for n == len(buf) {
			buf = make([]byte, 2*len(buf))
			n = runtime.Stack(buf, true)
		}
		if !bytes.Contains(buf[:n], []byte(managerStopFrame)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("goroutines in %s still run %s after the manager returned:\n%s", managerStopFrame, managerStopWait, buf[:n])
		}
		time.Sleep(managerStopPoll)
	}
}
