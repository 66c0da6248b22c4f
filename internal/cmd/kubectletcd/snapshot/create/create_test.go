package create_test

import (
	"context"
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/gate/gatetest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/snapshot/create"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var (
	toPVC = create.Options{Cluster: gatetest.ClusterName, PVC: create.PVC{Claim: "etcd-backups", SubPath: "demo"}}
	toS3  = create.Options{Cluster: gatetest.ClusterName, Name: "before-upgrade", S3: create.S3{
		Endpoint: "https://minio.backup.svc:9000", Bucket: "backups", Key: "etcd/demo", CredentialsSecret: "s3-credentials", ForcePathStyle: true,
	}}
)

func env(t *testing.T, objs ...client.Object) *invocationtest.Env {
	t.Helper()
	return invocationtest.New(t, gatetest.Namespace, objs...)
}

func run(e *invocationtest.Env, o create.Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	return create.Run(context.Background(), o, e.Deps)
}

func TestValidateIsAUsageError(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    create.Options
	}{
		{"no destination", create.Options{Cluster: "demo"}},
		{"both destinations", create.Options{Cluster: "demo", S3: toS3.S3, PVC: toPVC.PVC}},
		{"S3 without credentials", create.Options{Cluster: "demo", S3: create.S3{Endpoint: "https://s3", Bucket: "b"}}},
		{"subpath without claim", create.Options{Cluster: "demo", PVC: create.PVC{SubPath: "x"}}},
		{"bad name", create.Options{Cluster: "demo", Name: "Not_A_Name", PVC: toPVC.PVC}},
		{"long name", create.Options{Cluster: "demo", Name: strings.Repeat("a", 55), PVC: toPVC.PVC}},
	} {
		if err := tc.o.Validate(); invocation.Code(err) != invocation.ExitUsage {
			t.Errorf("%s: got %v (exit %d), want exit 2", tc.name, err, invocation.Code(err))
		}
	}
	if err := toS3.Validate(); err != nil {
		t.Errorf("S3 options refused: %v", err)
	}
}

func TestPlanGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    create.Options
	}{{"pvc", toPVC}, {"s3", toS3}} {
		for _, format := range []string{invocation.OutputText, invocation.OutputJSON} {
			e := env(t, gatetest.Cluster(3))
			e.Deps.Globals.Output = format
			if err := run(e, tc.o); err != nil {
				t.Fatal(err)
			}
			invocationtest.GoldenFile(t, "plan-"+tc.name+"."+format, e.Out.Bytes(), *update)
		}
	}
}

func TestRefusals(t *testing.T) {
	taken := &etcdv1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: gatetest.Namespace, Name: "before-upgrade"}}
	taken.Spec.ClusterRef.Name = gatetest.ClusterName
	taken.Status.Phase = etcdv1alpha2.SnapshotPhaseComplete
	for _, tc := range []struct {
		name, rule string
		objs       []client.Object
	}{
		{"paused", create.RuleClusterPaused, []client.Object{gatetest.Cluster(0)}},
		{"name taken", create.RuleNameFree, []client.Object{gatetest.Cluster(3), taken}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := env(t, tc.objs...)
			w := e.RecordWrites(t)
			e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
			err := run(e, toS3)
			if invocation.Code(err) != invocation.ExitRefused || !strings.Contains(err.Error(), "rule "+tc.rule+":") {
				t.Fatalf("got %v (exit %d), want exit 3 naming rule %s", err, invocation.Code(err), tc.rule)
			}
			if len(w.Lines) != 0 {
				t.Errorf("a refused plan wrote %v", w.Lines)
			}
		})
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	e := env(t, gatetest.Cluster(3))
	w := e.RecordWrites(t)
	if err := run(e, toPVC); err != nil {
		t.Fatal(err)
	}
	if len(w.Lines) != 0 {
		t.Errorf("dry run wrote %v", w.Lines)
	}
}

func TestApplyWithoutTerminalOrYesIsExit2(t *testing.T) {
	e := env(t, gatetest.Cluster(3))
	w := e.RecordWrites(t)
	e.Deps.Globals.Apply = true
	err := run(e, toPVC)
	if invocation.Code(err) != invocation.ExitUsage || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("got %v (exit %d), want exit 2 naming --yes", err, invocation.Code(err))
	}
	if len(w.Lines) != 0 {
		t.Errorf("unconfirmed apply wrote %v", w.Lines)
	}
}

func TestApplyWithYesCreatesThePlannedSnapshot(t *testing.T) {
	e := env(t, gatetest.Cluster(3))
	w := e.RecordWrites(t)
	e.Deps.Globals.Apply, e.Deps.Globals.Yes = true, true
	if err := run(e, toS3); err != nil {
		t.Fatal(err)
	}
	if want := []string{"create EtcdSnapshot tenant/before-upgrade"}; !slices.Equal(w.Lines, want) {
		t.Fatalf("writes %v, want %v", w.Lines, want)
	}
	got := &etcdv1alpha2.EtcdSnapshot{}
	if err := e.Deps.Kube.Get(context.Background(), client.ObjectKey{Namespace: gatetest.Namespace, Name: "before-upgrade"}, got); err != nil {
		t.Fatal(err)
	}
	want := etcdv1alpha2.EtcdSnapshotSpec{Destination: etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3SnapshotLocation{
		Endpoint: "https://minio.backup.svc:9000", Bucket: "backups", Key: "etcd/demo", ForcePathStyle: true,
	}}}
	want.ClusterRef.Name = gatetest.ClusterName
	want.Destination.S3.CredentialsSecretRef.Name = "s3-credentials"
	if d := cmp.Diff(want, got.Spec); d != "" {
		t.Errorf("spec (-want +got):\n%s", d)
	}
	if got.Labels[etcdv1alpha2.LabelCluster] != gatetest.ClusterName {
		t.Errorf("labels %v lack the cluster label", got.Labels)
	}
}

// TestWait plays the operator's snapshot controller between polls: Started, then final.
func TestWait(t *testing.T) {
	for _, tc := range []struct {
		name   string
		final  etcdv1alpha2.EtcdSnapshotStatus
		exit   int
		output string
	}{
		{"complete", etcdv1alpha2.EtcdSnapshotStatus{Phase: etcdv1alpha2.SnapshotPhaseComplete,
			Artifact: &etcdv1alpha2.SnapshotArtifact{URI: "pvc://etcd-backups/demo/x.db", SizeBytes: 4096, Checksum: "sha256:ab", Revision: 42}},
			invocation.ExitOK, "Complete: pvc://etcd-backups/demo/x.db, 4096 bytes, sha256:ab, revision 42"},
		{"failed", etcdv1alpha2.EtcdSnapshotStatus{Phase: etcdv1alpha2.SnapshotPhaseFailed, Conditions: []metav1.Condition{
			gatetest.Cond(etcdv1alpha2.ConditionReady, metav1.ConditionFalse, "NoSpace", "the PVC cannot hold the snapshot")}},
			invocation.ExitError, "failed: NoSpace: the PVC cannot hold the snapshot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := env(t, gatetest.Cluster(3))
			e.Deps.Globals.Apply, e.Deps.Globals.Yes, e.Deps.Globals.Wait = true, true, true
			o := toPVC
			o.Name = "x"
			done := make(chan error, 1)
			go func() { done <- run(e, o) }()
			status := func(st etcdv1alpha2.EtcdSnapshotStatus) func() {
				return func() {
					s := &etcdv1alpha2.EtcdSnapshot{}
					if err := e.Deps.Kube.Get(context.Background(), client.ObjectKey{Namespace: gatetest.Namespace, Name: "x"}, s); err != nil {
						t.Error(err)
					}
					s.Status = st
					if err := e.Deps.Kube.Status().Update(context.Background(), s); err != nil {
						t.Error(err)
					}
				}
			}
			invocationtest.Step(t, e, status(etcdv1alpha2.EtcdSnapshotStatus{Phase: etcdv1alpha2.SnapshotPhaseStarted, Conditions: []metav1.Condition{
				gatetest.Cond(etcdv1alpha2.ConditionReady, metav1.ConditionFalse, "JobRunning", "Job x-snapshot runs")}}))
			invocationtest.Step(t, e, status(tc.final))
			err := invocationtest.Wait(t, done)
			if invocation.Code(err) != tc.exit {
				t.Fatalf("got %v (exit %d), want exit %d", err, invocation.Code(err), tc.exit)
			}
			if out := e.ErrOut.String() + errText(err); !strings.Contains(out, tc.output) || !strings.Contains(out, "phase Started, Ready=False/JobRunning") {
				t.Errorf("output does not follow the phases to %q:\n%s", tc.output, out)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
