package migrate

import (
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
)

func TestValidate(t *testing.T) {
	s3 := S3Flags{Endpoint: "https://s3", Bucket: "b", CredentialsSecret: "creds"}
	tests := []struct {
		name string
		edit func(*Options)
		want string // "" = valid; else a fragment of the usage error
	}{
		{"dry run needs no destination", func(*Options) {}, ""},
		{"apply with skip-backup", func(o *Options) { o.Apply, o.SkipBackup = true, true }, ""},
		{"apply with S3", func(o *Options) { o.Apply, o.S3 = true, s3 }, ""},
		{"apply with PVC", func(o *Options) { o.Apply, o.PVC = true, PVCFlags{Claim: "backups"} }, ""},
		{"apply without destination", func(o *Options) { o.Apply = true }, "--apply needs a backup destination"},
		{"S3 without credentials", func(o *Options) { o.S3 = S3Flags{Endpoint: "e", Bucket: "b"} }, "--backup-s3-credentials-secret"},
		{"S3 without bucket", func(o *Options) { o.S3 = S3Flags{Endpoint: "e", CredentialsSecret: "c"} }, "--backup-s3-bucket"},
		{"S3 and PVC", func(o *Options) { o.S3, o.PVC = s3, PVCFlags{Claim: "c"} }, "exclusive"},
		{"skip-backup and S3", func(o *Options) { o.SkipBackup, o.S3 = true, s3 }, "--skip-backup contradicts"},
		{"skip-backup and PVC", func(o *Options) { o.SkipBackup, o.PVC = true, PVCFlags{Claim: "c"} }, "--skip-backup contradicts"},
		{"subpath without claim", func(o *Options) { o.PVC = PVCFlags{SubPath: "x"} }, "--backup-pvc-claim"},
		{"bad output", func(o *Options) { o.Output = "yaml" }, "--output"},
		{"bad controller ref", func(o *Options) { o.LegacyController = "nons" }, "--legacy-controller"},
		{"zero timeout", func(o *Options) { o.BackupTimeout = 0 }, "--backup-timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			tt.edit(o)
			err := o.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.want)
			}
			if code := invocation.Code(err); code != invocation.ExitUsage {
				t.Fatalf("exit code %d, want %d", code, invocation.ExitUsage)
			}
		})
	}
}

func TestBackupTarget(t *testing.T) {
	o := NewOptions()
	o.PVC = PVCFlags{Claim: "backups", SubPath: "etcd"}
	if got := o.BackupTarget(); got != "pvc://backups/etcd" {
		t.Fatalf("BackupTarget() = %q", got)
	}
	if d := o.Destination(); d.PVC == nil || d.PVC.ClaimName != "backups" || d.S3 != nil {
		t.Fatalf("Destination() = %+v", d)
	}
}
