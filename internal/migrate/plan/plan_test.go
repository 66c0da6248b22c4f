package plan_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/migrate/plan"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata from the output")

// golden compares got with testdata/name, or writes it there under -update.
func golden(tb testing.TB, name string, got []byte) {
	tb.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o750); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o600); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("reading %s (run the test with -update to create it): %v", path, err)
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("output differs from %s (run with -update to accept it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// operatorImage is the operator image of every test: the guard's image, part of the hash.
const operatorImage = "ghcr.io/etcd-operator/etcd-operator:v0.4.0"

type scenario struct {
	opts      legacyfixture.Options
	cfg       translate.Config
	planCfg   plan.Config
	backups   []legacy.EtcdBackup
	schedules []legacy.EtcdBackupSchedule
	// redact replaces what fresh certificates change on every run: CA digests and the
	// template hashes computed from them.
	redact bool
}

func (s scenario) plan(tb testing.TB) (*plan.Plan, *legacyfixture.Set) {
	tb.Helper()
	o := s.opts
	o.Formed = true
	set, err := legacyfixture.Build(o)
	if err != nil {
		tb.Fatal(err)
	}
	in, err := set.Inspected(s.cfg)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := s.planCfg
	cfg.GuardImage = operatorImage
	return plan.New(plan.Inputs{
		Translation: translate.Translate(in),
		Present:     plan.Present{StateConfigMap: true, PDB: set.PDB != nil, ClientService: true},
		Backups:     s.backups, Schedules: s.schedules, Config: cfg,
	}), set
}

var scenarios = map[string]scenario{
	"plaintext-3": {
		opts:    legacyfixture.Options{Name: "etcd", Namespace: "tenant-a", PDB: true, Image: "quay.io/coreos/etcd:v3.5.17"},
		planCfg: plan.Config{BackupTarget: "s3://backups/etcd-migrate"},
		backups: []legacy.EtcdBackup{backup("before-upgrade", legacy.BackupDestination{S3: &legacy.S3BackupDestination{
			Endpoint: "https://s3.example.com", Bucket: "backups", Key: "tenant-a/etcd/before-upgrade.db",
			CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-credentials"}}})},
		schedules: []legacy.EtcdBackupSchedule{schedule("nightly", "0 3 * * *", legacy.BackupDestination{PVC: &legacy.PVCBackupDestination{ClaimName: "etcd-backups", SubPath: "nightly/etcd.db"}})},
	},
	"peer-auto-tls": {
		opts:    legacyfixture.Options{Name: "etcd", Namespace: "tenant-b", Variant: legacyfixture.PeerAutoTLS, CAInCertSecrets: true, StorageClass: "fast", StorageSize: mustQuantity("8Gi")},
		planCfg: plan.Config{BackupTarget: "pvc://etcd-backups/migrate"},
		redact:  true,
	},
	"tls-auth": {
		opts:    legacyfixture.Options{Name: "etcd", Namespace: "tenant-c", Variant: legacyfixture.TLS, Auth: true, Options: map[string]string{"enable-v2": "false"}},
		planCfg: plan.Config{SkipBackup: true, SnapshotScheduleServed: true},
		schedules: []legacy.EtcdBackupSchedule{schedule("hourly", "0 * * * *", legacy.BackupDestination{S3: &legacy.S3BackupDestination{
			Endpoint: "https://s3.example.com", Bucket: "backups", Key: "tenant-c/etcd.db", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}})},
		redact: true,
	},
	"refused-emptydir": {
		opts: legacyfixture.Options{Name: "cache", Namespace: "tenant-d", EmptyDir: true, StorageSize: mustQuantity("1Gi")},
	},
}

func TestGoldenPlans(t *testing.T) {
	t.Parallel()
	for name, s := range scenarios {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, _ := s.plan(t)
			r := plan.NewReport(p)
			var text, js bytes.Buffer
			if err := r.Text(&text); err != nil {
				t.Fatal(err)
			}
			if err := r.JSON(&js); err != nil {
				t.Fatal(err)
			}
			golden(t, name+".txt", redact(p, s.redact, text.Bytes()))
			golden(t, name+".json", redact(p, s.redact, js.Bytes()))
		})
	}
}

var digest = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

func redact(p *plan.Plan, on bool, b []byte) []byte {
	if !on {
		return b
	}
	s := digest.ReplaceAllString(string(b), "sha256:<digest>")
	for _, m := range p.Members {
		s = strings.ReplaceAll(s, m.TemplateHash, "<template-hash>")
	}
	return []byte(s)
}

func backup(name string, d legacy.BackupDestination) legacy.EtcdBackup {
	b := legacy.EtcdBackup{Spec: legacy.EtcdBackupSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Destination: d}}
	b.Name = name
	return b
}

func schedule(name, cron string, d legacy.BackupDestination) legacy.EtcdBackupSchedule {
	s := legacy.EtcdBackupSchedule{Spec: legacy.EtcdBackupScheduleSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Schedule: cron, Destination: d,
		SuccessfulJobsHistoryLimit: ptr.To(int32(3))}}
	s.Name = name
	return s
}

// The refused cluster's plan must not write anything.
func TestRefusedPlanHasNoSteps(t *testing.T) {
	t.Parallel()
	p, _ := scenarios["refused-emptydir"].plan(t)
	if p.Verdict != plan.VerdictRefused || len(p.Steps) != 0 || p.Objects != nil || len(p.Refusals) == 0 {
		t.Errorf("refused plan = %+v", p)
	}
	if n := plan.NewReport(p).Refused(); n != 1 {
		t.Errorf("Refused() = %d", n)
	}
}
