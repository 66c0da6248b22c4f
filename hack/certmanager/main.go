// Command certmanager runs cert-manager's certificate controllers for the local cluster; see
// doc.go for what it runs and why it is assembled here.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// Each blank import registers one controller (or issuer type) with cert-manager's
	// controller registry through its init function.
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// controllers are the registered controllers this command runs; it refuses to start when the
// registry differs, so an upgrade that renames or adds one is noticed rather than half-run.
var controllers = []string{
	"certificaterequests-approver",
	"certificaterequests-issuer-ca",
	"certificaterequests-issuer-selfsigned",
	"certificates-issuing",
	"certificates-key-manager",
	"certificates-readiness",
	"certificates-request-manager",
	"certificates-revision-manager",
	"certificates-trigger",
	"clusterissuers",
	"issuers",
}

// Back-off after a failed issuance. Upstream's defaults (1 h, then up to 32 h) suit production;
// a test cluster whose issuer was not Ready yet should retry within seconds.
const (
	minIssueBackoff = 10 * time.Second
	maxIssueBackoff = 5 * time.Minute
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "certmanager:", err)
		stop()
		os.Exit(1)
	}
}

// run parses the flags, builds cert-manager's controller context and runs the controllers
// until ctx ends or one fails.
func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("certmanager", flag.ContinueOnError)
	klog.InitFlags(fs)
	defaultNS := os.Getenv("POD_NAMESPACE")
	if defaultNS == "" {
		defaultNS = "cert-manager"
	}
	clusterNS := fs.String("cluster-resource-namespace", defaultNS, "namespace of the CA Secrets of ClusterIssuers")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig; empty means in-cluster")
	workers := fs.Int("workers", 2, "workers per controller")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkRegistry(); err != nil {
		return err
	}
	logf.InitLogs()
	ctx = logf.NewContext(ctx, logf.Log, "controller")
	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:    *kubeconfig,
		IssuerOptions: controller.IssuerOptions{ClusterResourceNamespace: *clusterNS},
		CertificateOptions: controller.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: minIssueBackoff,
			CertificateRequestMaximumBackoffDuration: maxIssueBackoff,
		},
	})
	if err != nil {
		return fmt.Errorf("building cert-manager's controller context: %w", err)
	}
	return runControllers(ctx, factory, *workers)
}

// checkRegistry compares the registered controllers with the list this command runs.
func checkRegistry() error {
	var known []string
	for name := range controller.Known() {
		known = append(known, name)
	}
	slices.Sort(known)
	if !slices.Equal(known, controllers) {
		return fmt.Errorf("registered controllers %v, want %v", known, controllers)
	}
	return nil
}

// runControllers constructs every controller (which registers the informers each needs), then
// starts the shared informer factories, in the order cert-manager's own command uses.
func runControllers(ctx context.Context, factory *controller.ContextFactory, workers int) error {
	base, err := factory.Build()
	if err != nil {
		return err
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg   sync.WaitGroup
		once sync.Once
		fail error
	)
	for _, name := range controllers {
		c, err := controller.Known()[name](factory)
		if err != nil {
			return fmt.Errorf("constructing controller %s: %w", name, err)
		}
		wg.Go(func() {
			// A controller ends with an error when its context ends; that is a shutdown.
			if err := c.Run(workers, ctx); err != nil && parent.Err() == nil {
				once.Do(func() { fail = fmt.Errorf("controller %s: %w", name, err) })
				cancel()
			}
		})
	}
	base.SharedInformerFactory.Start(ctx.Done())
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	logf.Log.Info("controllers started", "controllers", controllers)
	wg.Wait()
	base.KubeSharedInformerFactory.Shutdown()
	base.SharedInformerFactory.Shutdown()
	base.HTTP01ResourceMetadataInformersFactory.Shutdown()
	return fail
}
