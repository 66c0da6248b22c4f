// Package migrate is etcd-migrate's root command: its flags (docs/migration.md, "Flags") and
// Run, which strings the phases together: gate, discover, inspect, plan, render, confirm,
// disable auth, backup, adopt, verify, summary.
package migrate

import (
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
)

// Output formats.
const (
	OutputText = "text"
	OutputJSON = "json"
)

// Options are etcd-migrate's own flags; the kubectl ones (kubeconfig, context, namespace) are
// bound by the root command.
type Options struct {
	Clusters            []string
	Apply, Yes          bool
	Output              string
	LegacyController    string
	NewController       string
	SkipControllerCheck bool
	Version             string
	AuthSecret          string
	SkipBackup          bool
	S3                  S3Flags
	PVC                 PVCFlags
	BackupTimeout       time.Duration
	AgentImage          string
}

// S3Flags are --backup-s3-*.
type S3Flags struct {
	Endpoint, Bucket, Key, Region, CredentialsSecret string
	ForcePathStyle                                   bool
}

// PVCFlags are --backup-pvc-*.
type PVCFlags struct{ Claim, SubPath string }

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		Output:           OutputText,
		LegacyController: "etcd-operator-system/etcd-operator-controller-manager",
		NewController:    "etcd-operator-system/etcd-operator",
		BackupTimeout:    30 * time.Minute,
	}
}

// Bind registers the flags.
func (o *Options) Bind(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.Clusters, "cluster", nil, "migrate only this legacy cluster (repeatable; default all)")
	fs.BoolVar(&o.Apply, "apply", false, "execute the plan (default: print it and change nothing)")
	fs.BoolVarP(&o.Yes, "yes", "y", false, "skip the [y/N] confirmation of --apply")
	fs.StringVarP(&o.Output, "output", "o", o.Output, "plan format: text or json")
	fs.StringVar(&o.LegacyController, "legacy-controller", o.LegacyController, "namespace/name of the legacy controller Deployment, which must be stopped")
	fs.StringVar(&o.NewController, "new-controller", o.NewController, "namespace/name of this project's operator Deployment (its image runs the backup and enters the template hash)")
	fs.BoolVar(&o.SkipControllerCheck, "skip-controller-check", false, "do not check that the legacy controller is stopped")
	fs.StringVar(&o.Version, "version", "", "etcd version X.Y.Z of the clusters (default: from the image tag)")
	fs.StringVar(&o.AuthSecret, "auth-secret", "", "[namespace/]name of a basic-auth Secret with root's password (default: generate <cluster>-root-credentials)")
	fs.BoolVar(&o.SkipBackup, "skip-backup", false, "do not back the clusters up before adopting them (no way back)")
	fs.StringVar(&o.S3.Endpoint, "backup-s3-endpoint", "", "S3 endpoint URL of the backup")
	fs.StringVar(&o.S3.Bucket, "backup-s3-bucket", "", "S3 bucket of the backup")
	fs.StringVar(&o.S3.Key, "backup-s3-key", "", "S3 key prefix of the backup")
	fs.StringVar(&o.S3.Region, "backup-s3-region", "", "S3 region of the backup")
	fs.BoolVar(&o.S3.ForcePathStyle, "backup-s3-force-path-style", false, "path-style S3 URLs (MinIO and most S3-compatible stores)")
	fs.StringVar(&o.S3.CredentialsSecret, "backup-s3-credentials-secret", "", "Secret with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, in each cluster's namespace")
	fs.StringVar(&o.PVC.Claim, "backup-pvc-claim", "", "PVC of the backup, in each cluster's namespace")
	fs.StringVar(&o.PVC.SubPath, "backup-pvc-subpath", "", "folder in --backup-pvc-claim")
	fs.DurationVar(&o.BackupTimeout, "backup-timeout", o.BackupTimeout, "bound on each cluster's backup")
	fs.StringVar(&o.AgentImage, "agent-image", "", "snapshot agent image (default: the image of --new-controller)")
}

// Validate checks the flags against each other (docs/migration.md, "Flags"); every error is a
// usage error (exit 2) naming the flag and the fix.
func (o *Options) Validate() error {
	if o.Output != OutputText && o.Output != OutputJSON {
		return invocation.Usagef("--output %q is not one of text, json", o.Output)
	}
	for flag, v := range map[string]string{"--legacy-controller": o.LegacyController, "--new-controller": o.NewController} {
		if ns, name, ok := strings.Cut(v, "/"); !ok || ns == "" || name == "" {
			return invocation.Usagef("%s %q must be namespace/name", flag, v)
		}
	}
	if o.BackupTimeout <= 0 {
		return invocation.Usagef("--backup-timeout must be positive, got %s", o.BackupTimeout)
	}
	s3, pvc := o.s3Set(), o.PVC != (PVCFlags{})
	switch {
	case s3 && pvc:
		return invocation.Usagef("--backup-s3-* and --backup-pvc-* are exclusive: choose one backup destination")
	case o.SkipBackup && (s3 || pvc):
		return invocation.Usagef("--skip-backup contradicts the --backup-* destination flags: drop one or the other")
	case s3 && (o.S3.Endpoint == "" || o.S3.Bucket == "" || o.S3.CredentialsSecret == ""):
		return invocation.Usagef("an S3 backup needs --backup-s3-endpoint, --backup-s3-bucket and --backup-s3-credentials-secret")
	case pvc && o.PVC.Claim == "":
		return invocation.Usagef("--backup-pvc-subpath needs --backup-pvc-claim")
	case o.Apply && !s3 && !pvc && !o.SkipBackup:
		return invocation.Usagef("--apply needs a backup destination (--backup-s3-* or --backup-pvc-claim), or --skip-backup to adopt without one")
	}
	return nil
}

func (o *Options) s3Set() bool {
	return o.S3 != (S3Flags{})
}

// Destination is the backup destination the flags name.
func (o *Options) Destination() etcdv1alpha2.SnapshotLocation {
	switch {
	case o.s3Set():
		return etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3SnapshotLocation{
			Endpoint: o.S3.Endpoint, Bucket: o.S3.Bucket, Key: o.S3.Key, Region: o.S3.Region, ForcePathStyle: o.S3.ForcePathStyle,
			CredentialsSecretRef: corev1.LocalObjectReference{Name: o.S3.CredentialsSecret},
		}}
	case o.PVC.Claim != "":
		return etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: o.PVC.Claim, SubPath: o.PVC.SubPath}}
	}
	return etcdv1alpha2.SnapshotLocation{}
}

// BackupTarget describes the destination for the plan.
func (o *Options) BackupTarget() string {
	switch d := o.Destination(); {
	case d.S3 != nil:
		return "s3://" + d.S3.Bucket + "/" + d.S3.Key
	case d.PVC != nil:
		return "pvc://" + d.PVC.ClaimName + "/" + d.PVC.SubPath
	}
	return ""
}
