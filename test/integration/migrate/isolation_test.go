package migrate_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/etcdmigrate/migrate"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/migrate/plan"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// refusedName is the refused legacy cluster next to the healthy one; no object of the healthy
// cluster has it in its name.
const refusedName = "cache"

// strayPeer is the peer URL of the refused member in the MemberPodMismatch case, which runs
// under a name no Pod has.
const strayPeer = "https://stray:2380"

// A refused cluster is left untouched while the others in its namespace are adopted
// (docs/migration.md, "Refusals"). The refused cluster has a real etcd member of its own, so
// that the case's refusal is its only one: the plan must name exactly that code.
func TestRefusedClusterUntouchedWhileOthersMigrate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		// codes are the plan's refusals, sorted: one, but for the etcd states that cannot exist
		// without another (see each case).
		codes []translate.Code
		// opts spoils the legacy cluster's options, etcdArgs its member's flags; after, the
		// objects applied from them or its etcd.
		opts     func(*legacyfixture.Options)
		etcdArgs []string
		after    func(*env, *testing.T)
	}{
		{codes: codes(translate.RefusalEmptyDirStorage), opts: func(o *legacyfixture.Options) { o.EmptyDir = true }},
		{codes: codes(translate.RefusalAuthWithoutServerTLS), opts: func(o *legacyfixture.Options) { o.Auth = true }},
		{codes: codes(translate.RefusalStorageTooSmall), opts: func(o *legacyfixture.Options) { o.StorageSize = resource.MustParse("128Mi") }},
		{codes: codes(translate.RefusalPVCMissing), after: (*env).removeRefusedPVC},
		{codes: codes(translate.RefusalPVCForeignOwner), after: (*env).ownRefusedPVC},
		// Its only member without a Running Pod: nothing to dial.
		{codes: codes(translate.RefusalInspectionFailed), after: (*env).stopRefusedPod},
		// Its etcd runs under another member name than its Pod's: the member has no Pod of its
		// name, the Pod no member. The peer URL goes with the name (etcd wants its own name in
		// --initial-cluster); it is not checked for a member without a Pod.
		{codes: codes(translate.RefusalMemberPodMismatch), etcdArgs: []string{
			"--name=stray", "--initial-advertise-peer-urls=" + strayPeer, "--initial-cluster=stray=" + strayPeer,
		}},
		{codes: codes(translate.RefusalLearnerPresent), after: (*env).addRefusedLearner},
		{codes: codes(translate.RefusalPeerURLLayout), after: (*env).moveRefusedPeerURL},
		{codes: codes(translate.RefusalAlarmsActive), etcdArgs: []string{"--quota-backend-bytes=" + strconv.Itoa(refusedQuota)}, after: (*env).fillRefusedQuota},
		// The image says 3.6.15, the member runs 3.6.16.
		{codes: codes(translate.RefusalVersionMismatch), opts: func(o *legacyfixture.Options) { o.Image = "quay.io/coreos/etcd:v3.6.15" }},
		// A tag with a build suffix, as registry.k8s.io's etcd images have: not guessed at,
		// so the running version is not compared either.
		{codes: codes(translate.RefusalVersionUnparsable), opts: func(o *legacyfixture.Options) { o.Image = "registry.k8s.io/etcd:3.6.16-0" }},
		// etcd older than 3.5 is not among the releases the tests run (ETCD_BIN_DIRS): the
		// image says 3.4.34 while the member runs 3.6.16, which is also a VersionMismatch.
		{codes: codes(translate.RefusalVersionMismatch, translate.RefusalVersionTooOld), opts: func(o *legacyfixture.Options) { o.Image = "quay.io/coreos/etcd:v3.4.34" }},
		// Two Pods answered by two separate etcd clusters. Each side lists only its own member,
		// so the other Pod has none: a split brain is always a MemberPodMismatch as well.
		{codes: codes(translate.RefusalMemberPodMismatch, translate.RefusalSplitBrain), opts: twoReplicas, after: (*env).splitRefused},
		// The same, with different data at the same revision on each side. Members of one
		// cluster cannot diverge here: they would have to reach each other's peer URLs
		// (<pod>.<headless>.<ns>.svc), which no name server here resolves.
		{codes: codes(translate.RefusalHashKVMismatch, translate.RefusalMemberPodMismatch, translate.RefusalSplitBrain), opts: twoReplicas, after: (*env).divergeRefused},
		// The second Pod's etcd does not answer; its member is not in the list the first one
		// gives (for the same reason), so that is a MemberPodMismatch as well.
		{codes: codes(translate.RefusalMemberPodMismatch, translate.RefusalMemberUnhealthy), opts: twoReplicas, after: (*env).silenceRefusedSecond},
	}
	for _, tc := range cases {
		t.Run(codesName(tc.codes), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			opts := legacyfixture.Options{Name: refusedName, Namespace: e.ns, Replicas: 1, Image: etcdImage}
			if tc.opts != nil {
				tc.opts(&opts)
			}
			e.addLegacy(t, opts, tc.etcdArgs...)
			if tc.after != nil {
				tc.after(e, t)
			}
			before := e.refusedObjects(t)

			e.assertPlanRefuses(t, tc.codes)
			e.assertApplyLeavesRefusedUntouched(t, before)
		})
	}
}

func codes(c ...translate.Code) []translate.Code { return c }

func codesName(c []translate.Code) string {
	parts := make([]string, len(c))
	for i := range c {
		parts[i] = string(c[i])
	}
	return strings.Join(parts, "+")
}

func twoReplicas(o *legacyfixture.Options) { o.Replicas = 2 }

// assertApplyLeavesRefusedUntouched runs --apply: the healthy cluster is adopted, and no
// object of the refused one changes, appears or goes.
func (e *env) assertApplyLeavesRefusedUntouched(t *testing.T, before map[string]string) {
	t.Helper()
	w := newWrites(-1)
	out, err := e.run(t, e.options(true), w)
	// docs/migration.md, "Exit codes": the others adopted, a refused cluster left untouched is 3.
	if code := invocation.Code(err); code != invocation.ExitRefused {
		t.Errorf("apply exited %d (%v), want %d\n%s", code, err, invocation.ExitRefused, out)
	}
	t.Logf("summary:\n%s", out)
	if !strings.Contains(out, e.ns+"/"+refusedName) || !strings.Contains(out, migrate.ResultRefused+": left untouched") {
		t.Errorf("the summary does not report %s refused", refusedName)
	}
	for _, l := range w.log {
		if strings.Contains(l, refusedName) {
			t.Errorf("the run wrote to the refused cluster: %s", l)
		}
	}
	e.assertAdopted(t)
	e.assertRefusedUnchanged(t, before)
}

// assertRefusedUnchanged compares the refused cluster's objects with before: none changed or
// went, and none appeared but those named in appeared (by refusedObjects' keys).
func (e *env) assertRefusedUnchanged(t *testing.T, before map[string]string, appeared ...string) {
	t.Helper()
	after := e.refusedObjects(t)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed:\nbefore %s\n after %s", k, v, after[k])
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok && !slices.Contains(appeared, k) {
			t.Errorf("%s appeared", k)
		}
	}
	for _, k := range appeared {
		if _, ok := after[k]; !ok {
			t.Errorf("%s did not appear", k)
		}
	}
}

// addLegacy applies one more legacy cluster to the namespace, with its Pods and PVCs, and the
// etcd member of its first Pod (args are more flags of it).
func (e *env) addLegacy(tb testing.TB, o legacyfixture.Options, args ...string) {
	tb.Helper()
	set, err := legacyfixture.Build(o)
	if err != nil {
		tb.Fatal(err)
	}
	if err := set.Apply(tb.Context(), k8sClient); err != nil {
		tb.Fatal(err)
	}
	e.createPodsAndPVCs(tb, set)
	e.added[o.Name] = set
	e.startMember(tb, set, args...)
}

// stopRefusedPod marks the refused cluster's Pod Pending, as the kubelet reports one whose
// container is not running.
func (e *env) stopRefusedPod(t *testing.T) {
	t.Helper()
	p := &corev1.Pod{}
	if err := k8sClient.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: legacy.PodName(refusedName, 0)}, p); err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodPending
	if err := k8sClient.Status().Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
}

// ownRefusedPVC gives the refused cluster's PVC a controller reference to another
// controller's object.
func (e *env) ownRefusedPVC(t *testing.T) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	if err := k8sClient.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: legacy.PVCName(legacy.PodName(refusedName, 0))}, pvc); err != nil {
		t.Fatal(err)
	}
	pvc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "foreign", UID: "foreign-uid", Controller: ptr.To(true)}}
	if err := k8sClient.Update(t.Context(), pvc); err != nil {
		t.Fatal(err)
	}
}

// removeRefusedPVC deletes the refused cluster's PVC and drops its finalizers (envtest's
// admission adds kubernetes.io/pvc-protection, and no controller ever releases it), so that it
// is gone.
func (e *env) removeRefusedPVC(t *testing.T) {
	t.Helper()
	name := legacy.PVCName(legacy.PodName(refusedName, 0))
	pvc := &corev1.PersistentVolumeClaim{}
	if err := k8sClient.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: name}, pvc); err != nil {
		t.Fatal(err)
	}
	pvc.Finalizers = nil
	if err := k8sClient.Update(t.Context(), pvc); err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Delete(t.Context(), pvc); err != nil {
		t.Fatal(err)
	}
	e.assertGone(t, &corev1.PersistentVolumeClaim{}, name)
}

// assertPlanRefuses checks that the dry run, as text and as JSON, refuses the refused cluster
// with exactly codes and plans the healthy one's adoption, and exits 3 (docs/migration.md,
// "Exit codes").
func (e *env) assertPlanRefuses(t *testing.T, want []translate.Code) {
	t.Helper()
	refused, healthy := e.ns+"/"+refusedName, e.ns+"/"+clusterName
	out, err := e.run(t, e.options(false), newWrites(0))
	if c := invocation.Code(err); c != invocation.ExitRefused {
		t.Fatalf("dry run exited %d (%v), want %d", c, err, invocation.ExitRefused)
	}
	if !strings.Contains(out, "Cluster "+refused+": REFUSED") || !strings.Contains(out, "2 cluster(s): 1 to adopt, 1 refused") {
		t.Errorf("the text plan does not refuse %s:\n%s", refused, out)
	}
	for _, code := range want {
		if !strings.Contains(out, string(code)+" (") {
			t.Errorf("the text plan does not name %s:\n%s", code, out)
		}
	}
	o := e.options(false)
	o.Output = migrate.OutputJSON
	out, err = e.run(t, o, newWrites(0))
	if c := invocation.Code(err); c != invocation.ExitRefused {
		t.Fatalf("JSON dry run exited %d (%v), want %d", c, err, invocation.ExitRefused)
	}
	var r plan.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("the JSON plan: %v\n%s", err, out)
	}
	verdicts := map[string]string{}
	for _, p := range r.Clusters {
		verdicts[p.Cluster] = p.Verdict
		got := make([]translate.Code, 0, len(p.Refusals))
		for _, f := range p.Refusals {
			got = append(got, f.Code)
		}
		t.Logf("%s: %s, refusals %v", p.Cluster, p.Verdict, got)
		if p.Cluster == refused && !slices.Equal(slices.Compact(got), want) {
			t.Errorf("the JSON plan refuses %s with %v, want %v", refused, got, want)
		}
	}
	if verdicts[refused] != plan.VerdictRefused || verdicts[healthy] != plan.VerdictAdopt {
		t.Errorf("JSON verdicts = %v, want %s refused and %s adopted", verdicts, refused, healthy)
	}
}

// refusedObjects renders every object in the namespace with the refused cluster's name in its
// own, whole (resourceVersion included), by kind and name: an object that changed, appeared
// or went shows in a comparison.
func (e *env) refusedObjects(t *testing.T) map[string]string {
	t.Helper()
	legacyList := &unstructured.UnstructuredList{}
	legacyList.SetGroupVersionKind(legacy.EtcdClusterGVK.GroupVersion().WithKind(legacy.EtcdClusterGVK.Kind + "List"))
	lists := []client.ObjectList{legacyList, &appsv1.StatefulSetList{}, &corev1.PodList{}, &corev1.PersistentVolumeClaimList{},
		&corev1.ServiceList{}, &corev1.ConfigMapList{}, &corev1.SecretList{}, &policyv1.PodDisruptionBudgetList{},
		&batchv1.JobList{}, &etcdv1alpha2.EtcdClusterList{}, &etcdv1alpha2.EtcdMemberList{}}
	out := map[string]string{}
	for _, l := range lists {
		if err := k8sClient.List(t.Context(), l, client.InNamespace(e.ns)); err != nil {
			t.Fatal(err)
		}
		items, err := metaItems(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range items {
			if !strings.Contains(o.GetName(), refusedName) {
				continue
			}
			b, err := json.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("%T %s", l, o.GetName())] = string(b)
		}
	}
	if len(out) == 0 {
		t.Fatal("no object of the refused cluster found")
	}
	return out
}
