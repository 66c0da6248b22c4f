package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/phase"
)

// Schema names the JSON shape of `etcd-migrate verify -o json`.
const Schema = "etcd-migrate-verify/v1"

// Report is every verified cluster.
type Report struct {
	Schema   string    `json:"schema"`
	Clusters []*Result `json:"clusters"`
}

// Run verifies every adopted cluster (migrated-from) in namespace ("" = all), or those named.
func Run(ctx context.Context, kube client.Client, d phase.Dialer, namespace string, names []string, asJSON bool, out io.Writer) error {
	var list etcdv1alpha2.EtcdClusterList
	if err := kube.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing EtcdClusters: %w", err)
	}
	rep := &Report{Schema: Schema, Clusters: []*Result{}}
	failed := 0
	for i := range list.Items {
		c := &list.Items[i]
		if c.Annotations[etcdv1alpha2.AnnotationMigratedFrom] == "" || (len(names) > 0 && !slices.Contains(names, c.Name)) {
			continue
		}
		res, err := Cluster(ctx, kube, d, c)
		if err != nil {
			return err
		}
		if !res.Passed() {
			failed++
		}
		rep.Clusters = append(rep.Clusters, res)
	}
	if asJSON {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintf(out, "%s\n", b)
	} else {
		for _, r := range rep.Clusters {
			if r.Passed() {
				_, _ = fmt.Fprintf(out, "%s: verified (same cluster and member IDs, HashKV equal, Available, no restart)\n", r.Cluster)
				continue
			}
			_, _ = fmt.Fprintf(out, "%s: FAILED\n    %s\n", r.Cluster, strings.Join(r.Problems, "\n    "))
		}
		_, _ = fmt.Fprintf(out, "%d adopted cluster(s), %d failed\n", len(rep.Clusters), failed)
	}
	if failed > 0 {
		return fmt.Errorf("%d cluster(s) failed verification", failed)
	}
	return nil
}
