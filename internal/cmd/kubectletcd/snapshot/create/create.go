// Package create is `kubectl etcd snapshot create`: it creates an EtcdSnapshot of a cluster, to
// S3 or to a PVC, and with --wait follows it to Complete or Failed. The operator's snapshot Job
// takes the snapshot, not the plugin (docs/backup-restore.md, "How a snapshot is taken").
package create

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/follow"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/mutation"
)

// Rules this command checks.
const (
	// RuleClusterPaused: the operator fails a snapshot of a paused cluster (ClusterPaused): no
	// member runs to take it from.
	RuleClusterPaused = "cluster-paused"
	// RuleNameFree: no EtcdSnapshot has the name yet (a snapshot is never taken twice).
	RuleNameFree = "name-free"
)

// maxName keeps the Job <name>-snapshot within the 63 characters of the job-name label the Job
// controller puts on its Pods.
const maxName = 63 - len("-snapshot")

// waitBound bounds --wait: past the snapshot Job's own 30-minute deadline and the 15 minutes a
// snapshot waits for a missing Secret (docs/backup-restore.md, "The snapshot Job").
const waitBound = 35 * time.Minute

// Options are the command's arguments.
type Options struct {
	Cluster string
	// Name is the EtcdSnapshot's name; empty picks <cluster>-<UTC time>.
	Name string
	S3   S3
	PVC  PVC
}

// S3 is the --s3-* destination.
type S3 struct {
	Endpoint, Bucket, Key, Region, CredentialsSecret string
	ForcePathStyle                                   bool
}

// PVC is the --pvc-* destination.
type PVC struct {
	Claim, SubPath string
}

// NewCmd is the cobra command.
func NewCmd(deps invocation.Factory) *cobra.Command {
	var o Options
	cmd := &cobra.Command{
		Use:   "create CLUSTER [--name N] (--s3-endpoint E --s3-bucket B [--s3-key K] [--s3-region R] --s3-credentials-secret S | --pvc-claim C [--pvc-subpath P])",
		Short: "Create an EtcdSnapshot: the operator stores a snapshot in S3 or on a PVC",
		Long: `snapshot create creates an EtcdSnapshot of CLUSTER. The operator runs a Job that streams a
snapshot from one voter into the destination, as <name>.db with <name>.db.sha256 beside it.
Give exactly one destination: an S3 bucket (with a Secret holding AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY) or a PVC in the cluster's namespace. --wait follows the snapshot until it
is Complete (exit 0) or Failed (exit 1, with the operator's reason).`,
		Example: `  kubectl etcd snapshot create demo --pvc-claim etcd-backups --pvc-subpath demo --apply --wait
  kubectl etcd snapshot create demo --name before-upgrade \
      --s3-endpoint https://s3.eu-west-1.amazonaws.com --s3-bucket backups --s3-key etcd/demo \
      --s3-region eu-west-1 --s3-credentials-secret s3-credentials --apply --wait`,
		Args: invocation.ExactArgs("CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Cluster = args[0]
			if err := o.Validate(); err != nil {
				return err
			}
			d, err := deps()
			if err != nil {
				return err
			}
			return Run(cmd.Context(), o, d)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Name, "name", "", "the EtcdSnapshot's name, and the artifact's (<name>.db); default <cluster>-<UTC date-time>")
	f.StringVar(&o.S3.Endpoint, "s3-endpoint", "", "S3 endpoint URL, e.g. https://s3.amazonaws.com or a MinIO URL")
	f.StringVar(&o.S3.Bucket, "s3-bucket", "", "S3 bucket")
	f.StringVar(&o.S3.Key, "s3-key", "", "S3 key prefix: the object is <key>/<name>.db")
	f.StringVar(&o.S3.Region, "s3-region", "", "S3 region (default us-east-1)")
	f.StringVar(&o.S3.CredentialsSecret, "s3-credentials-secret", "", "Secret in the namespace with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	f.BoolVar(&o.S3.ForcePathStyle, "s3-force-path-style", false, "put the bucket in the URL path (MinIO, Ceph)")
	f.StringVar(&o.PVC.Claim, "pvc-claim", "", "PersistentVolumeClaim in the namespace to write the snapshot to")
	f.StringVar(&o.PVC.SubPath, "pvc-subpath", "", "directory on the claim: the file is <subpath>/<name>.db")
	return cmd
}

// Validate checks that the flags name exactly one complete destination and a usable name.
func (o Options) Validate() error {
	s3 := o.S3 != S3{}
	pvc := o.PVC != PVC{}
	switch {
	case s3 == pvc:
		return invocation.Usagef("give exactly one destination: --s3-endpoint, --s3-bucket and --s3-credentials-secret, or --pvc-claim")
	case s3 && (o.S3.Endpoint == "" || o.S3.Bucket == "" || o.S3.CredentialsSecret == ""):
		return invocation.Usagef("an S3 destination needs --s3-endpoint, --s3-bucket and --s3-credentials-secret")
	case pvc && o.PVC.Claim == "":
		return invocation.Usagef("--pvc-subpath needs --pvc-claim")
	}
	if o.Name == "" {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(o.Name); len(errs) > 0 {
		return invocation.Usagef("--name %q: %s", o.Name, strings.Join(errs, "; "))
	}
	if len(o.Name) > maxName {
		return invocation.Usagef("--name %q is longer than %d characters: its Job %s-snapshot would be longer than a label value allows", o.Name, maxName, o.Name)
	}
	return nil
}

// Run plans the snapshot, and creates it when asked.
func Run(ctx context.Context, o Options, d *invocation.Deps) error {
	s, err := clusterread.Read(ctx, d.Kube, d.Namespace, o.Cluster, clusterread.Options{})
	if err != nil {
		return err
	}
	snap := Snapshot(s.Cluster, o, d.Clock.Now())
	existing, err := lookup(ctx, d.Kube, snap)
	if err != nil {
		return err
	}
	p := Plan(s.Cluster, snap, existing)
	return mutation.Execute(ctx, d, p, func(ctx context.Context) error {
		if err := d.Kube.Create(ctx, snap); err != nil {
			return fmt.Errorf("creating EtcdSnapshot %s/%s: %w", snap.Namespace, snap.Name, err)
		}
		_, _ = fmt.Fprintf(d.ErrOut, "Created EtcdSnapshot %s/%s.\n", snap.Namespace, snap.Name)
		if !d.Globals.Wait {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, waitBound)
		defer cancel()
		return follow.Until(ctx, d, o.Cluster, clusterread.Options{Snapshots: true}, func(s *clusterread.State) (bool, string, error) {
			return finished(s, snap.Name)
		})
	})
}

// Snapshot is the EtcdSnapshot o asks for, named at now when o names none.
func Snapshot(c *etcdv1alpha2.EtcdCluster, o Options, now time.Time) *etcdv1alpha2.EtcdSnapshot {
	name := o.Name
	if name == "" {
		stamp := now.UTC().Format("20060102-150405")
		name = strings.TrimSuffix(c.Name[:min(len(c.Name), maxName-len(stamp)-1)], "-") + "-" + stamp
	}
	snap := &etcdv1alpha2.EtcdSnapshot{
		TypeMeta: metav1.TypeMeta{APIVersion: etcdv1alpha2.GroupVersion.String(), Kind: "EtcdSnapshot"},
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: name,
			// As a schedule's snapshots are: kubectl get etcdsnapshot -l finds a cluster's.
			Labels: map[string]string{etcdv1alpha2.LabelCluster: c.Name}},
	}
	snap.Spec.ClusterRef.Name = c.Name
	if o.PVC.Claim != "" {
		snap.Spec.Destination.PVC = &etcdv1alpha2.PVCSnapshotLocation{ClaimName: o.PVC.Claim, SubPath: o.PVC.SubPath}
		return snap
	}
	snap.Spec.Destination.S3 = &etcdv1alpha2.S3SnapshotLocation{
		Endpoint: o.S3.Endpoint, Bucket: o.S3.Bucket, Key: o.S3.Key, Region: o.S3.Region, ForcePathStyle: o.S3.ForcePathStyle,
	}
	snap.Spec.Destination.S3.CredentialsSecretRef.Name = o.S3.CredentialsSecret
	return snap
}

// lookup returns the EtcdSnapshot that already has snap's name; nil when none does.
func lookup(ctx context.Context, r client.Reader, snap *etcdv1alpha2.EtcdSnapshot) (*etcdv1alpha2.EtcdSnapshot, error) {
	got := &etcdv1alpha2.EtcdSnapshot{}
	err := r.Get(ctx, types.NamespacedName{Namespace: snap.Namespace, Name: snap.Name}, got)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading EtcdSnapshot %s/%s: %w", snap.Namespace, snap.Name, err)
	}
	return got, nil
}

// Plan decides what creating snap of c takes; existing is the EtcdSnapshot of the same name,
// nil when there is none.
func Plan(c *etcdv1alpha2.EtcdCluster, snap, existing *etcdv1alpha2.EtcdSnapshot) *mutation.Plan {
	p := mutation.New("snapshot create", c.Namespace, c.Name)
	if clusterread.Replicas(c) == 0 {
		p.Check(RuleClusterPaused, false, "the cluster is paused (spec.replicas 0): no member runs to take a snapshot from; the operator would fail it (ClusterPaused)")
		return p
	}
	p.Check(RuleClusterPaused, true, fmt.Sprintf("the cluster runs (spec.replicas %d)", clusterread.Replicas(c)))
	if existing != nil {
		p.Check(RuleNameFree, false, fmt.Sprintf("EtcdSnapshot %s already exists (cluster %s, phase %s); a snapshot is taken once: pick another --name",
			existing.Name, existing.Spec.ClusterRef.Name, phase(existing)))
		return p
	}
	p.Check(RuleNameFree, true, fmt.Sprintf("no EtcdSnapshot is named %s yet", snap.Name))
	p.Step("create", "EtcdSnapshot "+snap.Namespace+"/"+snap.Name, "a snapshot of "+c.Name+" to "+destination(snap))
	p.Expect(fmt.Sprintf("the operator runs Job %s-snapshot, which streams a snapshot from a voter into the destination and writes %s.db.sha256 beside it", snap.Name, snap.Name))
	p.Expect("it refuses to overwrite another snapshot's file of the same name (ArtifactExists); Complete and Failed are final, and deleting the EtcdSnapshot leaves the file")
	return p
}

// destination renders where the artifact goes, without the Secret's contents.
func destination(snap *etcdv1alpha2.EtcdSnapshot) string {
	file := snap.Name + ".db"
	if d := snap.Spec.Destination.PVC; d != nil {
		return "pvc://" + joinPath(d.ClaimName, d.SubPath, file)
	}
	d := snap.Spec.Destination.S3
	region := d.Region
	if region == "" {
		region = "us-east-1"
	}
	out := fmt.Sprintf("s3://%s (endpoint %s, region %s, credentials from Secret %s", joinPath(d.Bucket, d.Key, file), d.Endpoint, region, d.CredentialsSecretRef.Name)
	if d.ForcePathStyle {
		out += ", path-style"
	}
	return out + ")"
}

func joinPath(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p = strings.Trim(p, "/"); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "/")
}

func phase(s *etcdv1alpha2.EtcdSnapshot) string {
	if s.Status.Phase == "" {
		return "not started"
	}
	return string(s.Status.Phase)
}

// finished is true once snapshot name is Complete; Failed ends the wait with the operator's
// reason (exit 1).
func finished(s *clusterread.State, name string) (bool, string, error) {
	var snap *etcdv1alpha2.EtcdSnapshot
	for i := range s.Snapshots {
		if s.Snapshots[i].Name == name {
			snap = &s.Snapshots[i]
		}
	}
	if snap == nil {
		return false, "", fmt.Errorf("EtcdSnapshot %s is gone", name)
	}
	progress := "phase " + phase(snap)
	var ready metav1.Condition
	for _, c := range snap.Status.Conditions {
		if c.Type == etcdv1alpha2.ConditionReady {
			ready = c
			progress += fmt.Sprintf(", Ready=%s/%s: %s", c.Status, c.Reason, c.Message)
		}
	}
	switch snap.Status.Phase {
	case etcdv1alpha2.SnapshotPhaseFailed:
		return false, progress, fmt.Errorf("snapshot %s failed: %s: %s", name, ready.Reason, ready.Message)
	case etcdv1alpha2.SnapshotPhaseComplete:
		if a := snap.Status.Artifact; a != nil {
			progress = fmt.Sprintf("Complete: %s, %d bytes, %s, revision %d", a.URI, a.SizeBytes, a.Checksum, a.Revision)
		}
		return true, progress, nil
	}
	return false, progress, nil
}
