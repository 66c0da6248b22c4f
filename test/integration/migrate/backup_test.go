package migrate_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/migrate"
	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/phase"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
	"github.com/etcd-operator/etcd-operator/test/utils/agentrun"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// A cluster whose mandatory backup fails is excluded (BackupFailed) and left as it was but for
// its backup Job, while the cluster next to it is backed up and adopted (docs/migration.md,
// "Refusals"). The snapshot agent runs for real against each cluster's etcd; the refused
// cluster's backup cannot be written to its claim.
func TestBackupFailureExcludesOnlyThatCluster(t *testing.T) {
	t.Parallel()
	const subPath = "premigrate"
	e := newEnv(t)
	e.addLegacy(t, legacyfixture.Options{Name: refusedName, Namespace: e.ns, Replicas: 1, Image: etcdImage})
	out, err := e.run(t, e.options(false), newWrites(0))
	if c := invocation.Code(err); c != invocation.ExitOK || !strings.Contains(out, "2 cluster(s): 2 to adopt, 0 refused") {
		t.Fatalf("dry run exited %d (%v), want both clusters adopted:\n%s", c, err, out)
	}
	before := e.refusedObjects(t)
	// The refused cluster's claim holds a file where the backup's folder goes.
	claims := map[string]string{clusterName: t.TempDir(), refusedName: t.TempDir()}
	if err := os.WriteFile(filepath.Join(claims[refusedName], subPath), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	o := e.options(true)
	o.SkipBackup, o.PVC = false, migrate.PVCFlags{Claim: "backups", SubPath: subPath}
	// Bounds the run when no agent ends a Job (runBackupJobs stopped on an error).
	o.BackupTimeout = time.Minute
	w := newWrites(-1)
	done := make(chan runResult, 1)
	go func() {
		out, err := e.run(t, o, w)
		done <- runResult{out, err}
	}()
	res := e.runBackupJobs(t, claims, done)

	t.Logf("summary:\n%s", res.out)
	// docs/migration.md, "Exit codes": a cluster not adopted for a failure is an error.
	if c := invocation.Code(res.err); c != invocation.ExitError {
		t.Errorf("apply exited %d (%v), want %d", c, res.err, invocation.ExitError)
	}
	if !strings.Contains(res.out, e.ns+"/"+refusedName) || !strings.Contains(res.out, migrate.ResultExcluded+": "+string(translate.RefusalBackupFailed)+": ") {
		t.Errorf("the summary does not report %s excluded for %s", refusedName, translate.RefusalBackupFailed)
	}
	for _, l := range w.log {
		if strings.Contains(l, refusedName) && l != "create *v1.Job "+phase.BackupJobName(refusedName) {
			t.Errorf("the run wrote to the refused cluster: %s", l)
		}
	}
	if !hasFile(t, claims[clusterName]) {
		t.Errorf("no backup of %s on its claim", clusterName)
	}
	e.assertAdopted(t)
	job := phase.BackupJobName(refusedName)
	e.assertRefusedUnchanged(t, before, "*v1.JobList "+job, "*v1.PodList "+job+"-0")
}

// runResult is what a run in the background printed and returned.
type runResult struct {
	out string
	err error
}

// runBackupJobs stands in for the Job controller and the kubelet until the run is done: it runs
// the snapshot agent of every backup Job with the Job's environment, but the endpoint of the
// cluster's etcd (the client Service does not resolve here) and claims[cluster] as the mounted
// claim, and ends the Job with the agent's result.
func (e *env) runBackupJobs(t *testing.T, claims map[string]string, done <-chan runResult) runResult {
	t.Helper()
	ran := map[string]bool{}
	for {
		select {
		case r := <-done:
			return r
		case <-time.After(100 * time.Millisecond):
		}
		jobs := &batchv1.JobList{}
		if err := k8sClient.List(t.Context(), jobs, client.InNamespace(e.ns)); err != nil {
			// The run logs through t: it must end before the test does.
			t.Error(err)
			return <-done
		}
		for i := range jobs.Items {
			job := &jobs.Items[i]
			cluster := strings.TrimSuffix(job.Name, phase.BackupJobName(""))
			if ran[job.Name] || e.members[cluster] == nil {
				continue
			}
			ran[job.Name] = true
			env := map[string]string{}
			for _, v := range job.Spec.Template.Spec.Containers[0].Env {
				env[v.Name] = v.Value
			}
			env[snapshot.EnvEndpoints] = e.members[cluster].Members[0].ClientURL
			env[snapshot.EnvPVCDir] = claims[cluster]
			code, res := agentrun.Snapshot(t.Context(), t, env)
			t.Logf("backup of %s: exit %d, %+v", cluster, code, res)
			if err := agentrun.FinishSnapshotJob(t.Context(), k8sClient, job, res); err != nil {
				t.Error(err)
				return <-done
			}
		}
	}
}

// hasFile reports whether dir holds a regular file, at any depth.
func hasFile(t *testing.T, dir string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			found = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
