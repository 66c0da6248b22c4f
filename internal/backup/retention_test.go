package backup

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func TestOwningSchedule(t *testing.T) {
	t.Parallel()
	ref := func(edit func(*metav1.OwnerReference)) []metav1.OwnerReference {
		r := metav1.OwnerReference{APIVersion: "etcd-operator.cozystack.io/v1alpha2", Kind: "EtcdSnapshotSchedule", Name: "nightly", UID: "uid-s", Controller: ptr.To(true)}
		if edit != nil {
			edit(&r)
		}
		return []metav1.OwnerReference{r}
	}
	labelled := map[string]string{etcdv1alpha2.LabelSchedule: "nightly"}
	cases := []struct {
		name   string
		refs   []metav1.OwnerReference
		labels map[string]string
		want   bool
	}{
		{"created by the schedule", ref(nil), labelled, true},
		{"one-off", nil, nil, false},
		{"labelled by hand, no owner", nil, labelled, false},
		{"owned, not labelled", ref(nil), nil, false},
		{"label names another schedule", ref(nil), map[string]string{etcdv1alpha2.LabelSchedule: "weekly"}, false},
		{"owner, not controller", ref(func(r *metav1.OwnerReference) { r.Controller = nil }), labelled, false},
		{"another kind", ref(func(r *metav1.OwnerReference) { r.Kind = "CronJob" }), labelled, false},
		{"another group", ref(func(r *metav1.OwnerReference) { r.APIVersion = "example.com/v1" }), labelled, false},
	}
	for _, c := range cases {
		s := &etcdv1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "nightly-1", OwnerReferences: c.refs, Labels: c.labels}}
		if got := OwningSchedule(s); (got != nil) != c.want || (got != nil && got.UID != "uid-s") {
			t.Errorf("%s: OwningSchedule = %+v, want found=%v", c.name, got, c.want)
		}
	}
}

func TestPruningSummary(t *testing.T) {
	t.Parallel()
	if got := (Pruning{}).Summary(); got != "" {
		t.Errorf("nothing pruned: %q, want empty", got)
	}
	if got, want := (Pruning{Pruned: []string{"n-1.db"}, Count: 1}).Summary(), "pruned 1 older artifact of the schedule: n-1.db"; got != want {
		t.Errorf("one: %q, want %q", got, want)
	}
	// The agent shortened the list: the count still tells; and a long list is cut here too.
	if got, want := (Pruning{Pruned: []string{"n-1.db", "n-2.db"}, Count: 5, Error: "deleting n-3.db: AccessDenied"}).Summary(),
		"pruned 5 older artifacts of the schedule: n-1.db, n-2.db, and 3 more; the schedule's retention failed, the snapshot is stored: deleting n-3.db: AccessDenied"; got != want {
		t.Errorf("shortened with an error:\n%q\nwant\n%q", got, want)
	}
	var many []string
	for i := range 100 {
		many = append(many, fmt.Sprintf("%s-%d.db", strings.Repeat("n", 40), i))
	}
	got := (Pruning{Pruned: many, Count: 100}).Summary()
	if len(got) > 600 || !strings.HasSuffix(got, " more") {
		t.Errorf("100 names: %d bytes, ends %q", len(got), got[len(got)-20:])
	}
}

func TestPlanReportsThePruning(t *testing.T) {
	t.Parallel()
	in := ready()
	in.Phase, in.Job = etcdv1alpha2.SnapshotPhaseStarted, JobSucceeded
	in.Outcome = Outcome{Artifact: &etcdv1alpha2.SnapshotArtifact{URI: "s3://b/n-3.db"}, Pruning: Pruning{Error: "listing: AccessDenied"}}
	d := Plan(in)
	if d.Phase != etcdv1alpha2.SnapshotPhaseComplete || d.Reason != ReasonSnapshotStored || d.Pruning.Error == "" ||
		!strings.Contains(d.Message, "stored s3://b/n-3.db") || !strings.Contains(d.Message, "retention failed, the snapshot is stored: listing: AccessDenied") {
		t.Errorf("Plan = %+v", d)
	}
}
