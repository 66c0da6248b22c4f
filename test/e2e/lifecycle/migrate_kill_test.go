//go:build e2e

package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcd-operator/etcd-operator/internal/migrate/plan"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// TestMigrateKilledBetweenWrites interrupts the adoption of a plaintext legacy cluster at every
// write (issue #19, docs/migration.md "Adoption steps"; docs/e2e-lifecycle.md, "Migration from
// the legacy operator"): the real etcd-migrate binary runs against a kubeconfig that points at
// the test's API proxy, which SIGKILLs it when its second write arrives, before forwarding it.
// Each run thus performs exactly one write, the next one of the adoption, with the operator
// running between the runs and a client writing through the client Service:
//   - run k performs write k and repeats none of the earlier ones; the runs until one exits 0
//     are as many as the adopt writes of the cluster's plan (-o json);
//   - a further run writes nothing;
//   - the end state is TestMigratePlaintextUnderWrites's (verify, cluster and member IDs, HashKV,
//     the same Pods with their restart counts, the traffic), and no PVC was deleted.
func TestMigrateKilledBetweenWrites(t *testing.T) {
	t.Parallel()
	f := framework.NewTest(t, framework.Migration, framework.Tools)
	requireOperator(f)
	r := startLegacy(f, legacyfixture.Plaintext, false)
	claims := claimUIDs(f)
	r.writer = f.StartClientPod("writer")
	load := r.startPodLoad(f, legacyName, "/migrate/")
	r.stopController(f)
	planned := r.plannedWrites(f)
	proxy := f.StartAPIWriteProxy()
	from := time.Now()
	writes := r.killedChain(f, proxy, planned)
	f.Record("migrate-killed-chain", since(from), fmt.Sprintf("%d etcd-migrate --apply runs, each killed before its second write, until one exits 0", len(writes)))
	f.RecordCount("migrate-killed-runs", int64(len(writes)), "runs of the kill-between-writes chain (= the plan's adopt writes)")
	if len(writes) != len(planned) {
		f.T.Errorf("%d runs completed the adoption, the plan has %d adopt writes:\nproxied %v\nplanned %v", len(writes), len(planned), writes, planned)
	}
	if audited := migrateWrites(f, from, time.Now()); len(audited) != len(writes) {
		f.T.Errorf("the audit log holds %d writes of etcd-migrate during the chain, the proxy forwarded %d: %v", len(audited), len(writes), describeAll(audited))
	}
	if w := r.proxiedRun(f, proxy, -1); w.res.Code != 0 || len(w.forwarded) != 0 {
		f.T.Errorf("the run after the adoption: %s\nwrites %v; want exit 0 and none", w.res, w.forwarded)
	}
	r.checkAdopted(f, load)
	if after := claimUIDs(f); !maps.Equal(after, claims) {
		f.T.Errorf("PVCs (UIDs) %v after the adoption, were %v: a PVC was deleted or replaced", after, claims)
	}
}

// proxiedResult is one etcd-migrate --apply run through the proxy.
type proxiedResult struct {
	res       framework.PluginResult
	forwarded []framework.APIWrite
	refused   *framework.APIWrite
}

// proxiedRun runs etcd-migrate --apply through the proxy, killed when write allow+1 arrives
// (never when allow < 0).
func (r *legacyRun) proxiedRun(f *framework.Test, proxy *framework.APIWriteProxy, allow int) proxiedResult {
	f.T.Helper()
	ctx, cancel := context.WithTimeout(f.Ctx, migrateTimeout)
	defer cancel()
	p := f.NewEtcdMigrate(ctx, proxy.Kubeconfig, "--legacy-controller", r.controller, "--apply", "-y", "--skip-backup")
	proxy.Arm(allow, p.Kill)
	p.Start()
	out := proxiedResult{res: p.Wait()}
	var failures []string
	out.forwarded, out.refused, failures = proxy.Taken()
	if len(failures) > 0 {
		f.T.Errorf("the proxy could not forward: %v", failures)
	}
	return out
}

// killedChain runs etcd-migrate until a run exits 0, each killed before its second write, and
// returns the write each run made. A run that repeats an earlier run's write fails the test:
// resumption must see what is done.
func (r *legacyRun) killedChain(f *framework.Test, proxy *framework.APIWriteProxy, planned []string) []framework.APIWrite {
	f.T.Helper()
	var done []framework.APIWrite
	for run := 1; run <= len(planned)+1; run++ {
		w := r.proxiedRun(f, proxy, 1)
		if len(w.forwarded) != 1 {
			f.T.Fatalf("run %d made %d writes %v, want 1 (write %d of the plan, %s): %s", run, len(w.forwarded), w.forwarded, run, nth(planned, run-1), w.res)
		}
		write := w.forwarded[0]
		if write.Code >= 300 {
			f.T.Fatalf("run %d: write %s answered %d: %s", run, write, write.Code, w.res)
		}
		if i := slices.IndexFunc(done, func(d framework.APIWrite) bool { return d.String() == write.String() }); i >= 0 {
			f.T.Errorf("run %d repeated write %d (%s) of run %d", run, i+1, write, i+1)
		}
		done = append(done, write)
		if w.refused == nil {
			if w.res.Code != 0 {
				f.T.Fatalf("run %d made write %d (%s) and ended without a second: %s", run, run, write, w.res)
			}
			f.T.Logf("run %d: write %d %s (plan: %s), then exit 0", run, run, write, nth(planned, run-1))
			return done
		}
		if w.res.Code != -1 {
			f.T.Errorf("run %d: exit %d, want -1 (SIGKILL)", run, w.res.Code)
		}
		r.requireLeftAlone(f, run)
		f.T.Logf("run %d: write %d %s (plan: %s); SIGKILLed before %s", run, run, write, nth(planned, run-1), w.refused)
	}
	f.T.Fatalf("no run completed after %d runs (the plan has %d adopt writes): %v", len(planned)+1, len(planned), done)
	return nil
}

// partialStateSettle is how long the operator has with each partial state before the next run:
// its watch sees a change within milliseconds, and one reconcile takes less than a second.
const partialStateSettle = 2 * time.Second

// requireLeftAlone gives the operator partialStateSettle with the state a killed run left, then
// checks that no member Pod was replaced, restarted or added: the operator leaves objects that
// carry adoption-in-progress alone (docs/migration.md, "Adoption steps").
func (r *legacyRun) requireLeftAlone(f *framework.Test, run int) {
	f.T.Helper()
	select {
	case <-time.After(partialStateSettle):
	case <-f.Ctx.Done():
		f.T.Fatal(f.Ctx.Err())
	}
	pods := podStates(f, legacySelector())
	maps.Copy(pods, podStates(f, podSelector(legacyName)))
	if !maps.Equal(pods, r.before.pods) {
		f.T.Errorf("after run %d, member Pods (UID, restarts) %v, were %v: the operator acted on a partial adoption", run, pods, r.before.pods)
	}
}

// plannedWrites are the API writes of the cluster's adopt phase, from the dry run's -o json plan
// (docs/migration.md, "Adoption steps"): each create, patch, delete and orphan-delete action.
func (r *legacyRun) plannedWrites(f *framework.Test) []string {
	f.T.Helper()
	res := runMigrate(f, "--legacy-controller", r.controller, "--skip-backup", "-o", "json")
	if res.Code != 0 {
		f.T.Fatalf("etcd-migrate dry run -o json: %s", res)
	}
	var report plan.Report
	if err := json.Unmarshal([]byte(res.Stdout), &report); err != nil {
		f.T.Fatalf("the -o json plan: %v\n%s", err, res.Stdout)
	}
	var out []string
	for _, c := range report.Clusters {
		if c.Cluster != f.Namespace+"/"+legacyName {
			continue
		}
		for _, s := range c.Steps {
			for _, a := range s.Actions {
				if s.Phase == plan.PhaseAdopt && slices.Contains([]string{plan.VerbCreate, plan.VerbPatch, plan.VerbDelete, plan.VerbOrphanDelete}, a.Verb) {
					out = append(out, fmt.Sprintf("%d. %s %s %s", s.Number, a.Verb, a.Kind, a.Name))
				}
			}
		}
	}
	if len(out) == 0 {
		f.T.Fatalf("the plan of %s has no adopt writes:\n%s", legacyName, res.Stdout)
	}
	f.T.Logf("the plan has %d adopt writes: %s", len(out), strings.Join(out, "; "))
	return out
}

func nth(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "none"
}

// claimUIDs are the namespace's PVCs by name.
func claimUIDs(f *framework.Test) map[string]types.UID {
	f.T.Helper()
	list, err := f.Kube.CoreV1().PersistentVolumeClaims(f.Namespace).List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, c := range list.Items {
		out[c.Name] = c.UID
	}
	return out
}
