package plan_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/migrate/plan"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// planOf plans a fixture cluster after mutate changed its inspected input.
func planOf(tb testing.TB, o legacyfixture.Options, cfg plan.Config, present plan.Present, mutate func(*translate.Input)) *plan.Plan {
	tb.Helper()
	o.Formed = true
	set, err := legacyfixture.Build(o)
	if err != nil {
		tb.Fatal(err)
	}
	in, err := set.Inspected(translate.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	if mutate != nil {
		mutate(&in)
	}
	return plan.New(plan.Inputs{Translation: translate.Translate(in), Present: present, Config: cfg})
}

// stepOf is the adoption step n.
func stepOf(tb testing.TB, p *plan.Plan, n int) plan.Step {
	tb.Helper()
	for _, s := range p.Steps {
		if s.Phase == plan.PhaseAdopt && s.Number == n {
			return s
		}
	}
	tb.Fatalf("no adoption step %d in %+v", n, p.Steps)
	return plan.Step{}
}

func verbs(s plan.Step) []string {
	out := []string{}
	for _, a := range s.Actions {
		out = append(out, a.Verb+" "+a.Kind+" "+a.Name)
	}
	return out
}

func TestStepOrder(t *testing.T) {
	t.Parallel()
	p := planOf(t, legacyfixture.Options{}, plan.Config{}, plan.Present{StateConfigMap: true, ClientService: true}, nil)
	var got []string
	for _, s := range p.Steps {
		got = append(got, s.Phase+" "+strings.Repeat("#", s.Number))
	}
	want := []string{"backup ", "adopt #", "adopt ##", "adopt ###", "adopt ####", "adopt #####", "adopt ######", "adopt #######", "adopt ########", "adopt #########"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	// Orphan-deleting the legacy owners comes before the Pods are re-owned, and the old
	// client Service is gone before the new one of its name is created.
	if diff := cmp.Diff([]string{"orphan-delete EtcdCluster.etcd.aenix.io etcd", "orphan-delete StatefulSet etcd", "wait StatefulSet etcd"}, verbs(stepOf(t, p, 4))); diff != "" {
		t.Errorf("step 4 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"delete Service etcd", "wait Service etcd", "create Service etcd"}, verbs(stepOf(t, p, 7))); diff != "" {
		t.Errorf("step 7 (-want +got):\n%s", diff)
	}
	last := stepOf(t, p, 8).Actions
	if a := last[len(last)-1]; a.Kind != "EtcdCluster" || a.Verb != plan.VerbPatch {
		t.Errorf("the cluster's annotation is not removed last: %+v", a)
	}
}

func TestStepVariants(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		opts    legacyfixture.Options
		cfg     plan.Config
		present plan.Present
		mutate  func(*translate.Input)
		step    int
		want    []string
		change  string
	}{
		"no legacy PDB, ConfigMap only": {present: plan.Present{StateConfigMap: true}, step: 5,
			want: []string{"delete ConfigMap etcd-cluster-state"}},
		"legacy PDB": {opts: legacyfixture.Options{PDB: true}, present: plan.Present{StateConfigMap: true, PDB: true}, step: 5,
			want: []string{"delete ConfigMap etcd-cluster-state", "delete PodDisruptionBudget etcd"}},
		"a client Service under its own name is kept": {present: plan.Present{ClientService: true}, step: 7,
			mutate: func(in *translate.Input) {
				in.Cluster.Spec.ServiceTemplate = &legacy.EmbeddedService{EmbeddedObjectMetadata: legacy.EmbeddedObjectMetadata{Name: "etcd-lb"}}
			},
			want: []string{"keep Service etcd-lb", "create Service etcd"}},
		"PVCs owned by the cluster when the StatefulSet deleted its PVCs": {step: 6,
			mutate: func(in *translate.Input) {
				in.StatefulSet.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
			},
			change: "ownerReference → EtcdCluster etcd (reclaimPolicy Delete)"},
		"schedules become EtcdSnapshotSchedules when served": {cfg: plan.Config{SnapshotScheduleServed: true}, step: 9,
			want: []string{"skip EtcdBackup.etcd.aenix.io -"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := planOf(t, tc.opts, tc.cfg, tc.present, tc.mutate)
			if p.Verdict != plan.VerdictAdopt {
				t.Fatalf("refused: %+v", p.Refusals)
			}
			s := stepOf(t, p, tc.step)
			if tc.want != nil {
				if diff := cmp.Diff(tc.want, verbs(s)); diff != "" {
					t.Errorf("step %d (-want +got):\n%s", tc.step, diff)
				}
			}
			if tc.change != "" && !strings.Contains(s.Actions[1].Change, tc.change) {
				t.Errorf("step %d: %q does not say %q", tc.step, s.Actions[1].Change, tc.change)
			}
		})
	}
}

func TestBackupPhase(t *testing.T) {
	t.Parallel()
	skip := planOf(t, legacyfixture.Options{}, plan.Config{SkipBackup: true}, plan.Present{}, nil)
	if s := skip.Steps[0]; s.Phase != plan.PhaseBackup || s.Actions[0].Verb != plan.VerbSkip {
		t.Errorf("--skip-backup: %+v", s)
	}
	p := planOf(t, legacyfixture.Options{}, plan.Config{BackupTarget: "s3://b/p"}, plan.Present{}, nil)
	if diff := cmp.Diff([]string{"create Job etcd-migrate-backup", "wait Job etcd-migrate-backup"}, verbs(p.Steps[0])); diff != "" {
		t.Errorf("backup (-want +got):\n%s", diff)
	}
}

func TestDestination(t *testing.T) {
	t.Parallel()
	for want, d := range map[string]legacy.BackupDestination{
		"s3://b/tenant/etcd": {S3: &legacy.S3BackupDestination{Bucket: "b", Key: "tenant/etcd/x.db"}},
		"s3://b/":            {S3: &legacy.S3BackupDestination{Bucket: "b", Key: "x.db"}},
		"pvc://claim/a":      {PVC: &legacy.PVCBackupDestination{ClaimName: "claim", SubPath: "/a/b.db"}},
		"(no destination)":   {},
	} {
		if got := plan.Destination(d); got != want {
			t.Errorf("Destination(%+v) = %q, want %q", d, got, want)
		}
	}
	loc := plan.SnapshotLocation(legacy.BackupDestination{S3: &legacy.S3BackupDestination{Endpoint: "https://s3", Bucket: "b", Key: "p/x.db", Region: "eu", ForcePathStyle: true}})
	if loc.S3 == nil || loc.S3.Key != "p" || loc.S3.Region != "eu" || !loc.S3.ForcePathStyle || loc.PVC != nil {
		t.Errorf("SnapshotLocation = %+v", loc.S3)
	}
}
