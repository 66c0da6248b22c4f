// Command binaries builds the pinned third-party binaries into the cache and prints their
// folders on stdout, one per line; progress goes to stderr. See doc.go for subcommands.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "hack/binaries:", err)
		stop()
		os.Exit(1)
	}
}
