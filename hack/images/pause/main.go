// Command pause is the sandbox ("pause") container of the local cluster's Pods. It holds the
// Pod's namespaces open by living until it is told to stop, and, being PID 1 when Pods share a
// process namespace, reaps the zombies of orphaned children. The upstream pause image is behind
// a registry this machine cannot reach, so the local cluster builds this one from source.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every exited child; one SIGCHLD may stand for several exits.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
