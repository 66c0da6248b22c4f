//go:build !windows

package guard

import (
	"os"
	"syscall"
)

// forwarded are the signals the guard passes on to etcd: the kubelet stops a container with
// SIGTERM, and etcd hands its leadership over before it exits.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}
