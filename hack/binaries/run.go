package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/etcd-operator/etcd-operator/hack/binaries/pinned"
)

const usage = `usage: go run ./hack/binaries <envtest|kubernetes|etcd [x.y.z ...]|coredns|certmanager|certmanager-crds|s3server|helm|promtool|prometheus|all>`

// run dispatches one subcommand, printing the folders it yields on stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("missing subcommand\n%s", usage)
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := pinned.FindRepoRoot(wd)
	if err != nil {
		return fmt.Errorf("run from inside the etcd-operator repository: %w", err)
	}
	versions, err := pinned.LoadVersions(root)
	if err != nil {
		return err
	}
	cacheDir, err := pinned.DefaultCacheDir()
	if err != nil {
		return err
	}
	b := pinned.NewBuilder(cacheDir, versions, stderr)

	var steps []func(context.Context) (string, error)
	certManager := func(ctx context.Context) (string, error) { return b.CertManager(ctx, root) }
	s3Server := func(ctx context.Context) (string, error) { return b.S3Server(ctx, root) }
	sub, rest := args[0], args[1:]
	if sub != "etcd" && len(rest) > 0 {
		return fmt.Errorf("%s takes no arguments\n%s", sub, usage)
	}
	etcd := func(releases []string) {
		if len(releases) == 0 {
			releases = versions.Etcd
		}
		for _, r := range releases {
			steps = append(steps, func(ctx context.Context) (string, error) { return b.Etcd(ctx, r) })
		}
	}
	switch sub {
	case "envtest":
		steps = append(steps, b.Envtest)
	case "kubernetes":
		steps = append(steps, b.Kubernetes)
	case "etcd":
		etcd(rest)
	case "coredns":
		steps = append(steps, b.CoreDNS)
	case "certmanager":
		steps = append(steps, certManager)
	case "certmanager-crds":
		steps = append(steps, func(ctx context.Context) (string, error) { return b.CertManagerCRDs(ctx, root) })
	case "s3server":
		steps = append(steps, s3Server)
	case "helm":
		steps = append(steps, b.Helm)
	case "promtool":
		steps = append(steps, b.Promtool)
	case "prometheus":
		steps = append(steps, b.Prometheus)
	case "all":
		steps = append(steps, b.Kubernetes)
		etcd(nil)
		steps = append(steps, b.CoreDNS, certManager, s3Server, b.Helm, b.Promtool, b.Prometheus)
	default:
		return fmt.Errorf("unknown subcommand %q\n%s", sub, usage)
	}
	dirs, err := runConcurrently(ctx, steps, concurrentBuilds)
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		if _, err := fmt.Fprintln(stdout, dir); err != nil {
			return err
		}
	}
	return nil
}

// concurrentBuilds bounds the builds that run at once. A cold build of one set spends most of
// its wall time waiting for module downloads and in its single-threaded link (helm: 178 CPU
// seconds in 6m41s of wall time on 2 cores), so a few sets side by side fill the cores; more
// would only add memory (a link of the Kubernetes commands takes about 2 GB).
const concurrentBuilds = 4

// runConcurrently runs steps, at most limit at a time, and returns their folders in the order
// of steps (callers such as ETCD_BIN_DIRS depend on it), or the first error in that order. A
// failed step does not stop the others: what they built stays cached for the next run.
func runConcurrently(ctx context.Context, steps []func(context.Context) (string, error), limit int) ([]string, error) {
	dirs := make([]string, len(steps))
	errs := make([]error, len(steps))
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i, step := range steps {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			dirs[i], errs[i] = step(ctx)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return dirs, nil
}
