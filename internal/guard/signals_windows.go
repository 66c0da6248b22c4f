package guard

import (
	"os"
	"syscall"
)

// forwarded lacks SIGUSR1 and SIGUSR2, which Windows does not have. The guard only runs in a
// Linux container; this file exists because kubectl-etcd, built for Windows too, imports
// packages that import this one (the Pod template's guard flags, the health patterns).
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT}
