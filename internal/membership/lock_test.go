package membership

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Hour)
	spec := func(replicas int32) *etcdv1alpha2.EtcdClusterSpec {
		return &etcdv1alpha2.EtcdClusterSpec{Replicas: ptr.To(replicas), Version: "3.6.5", ProgressDeadlineSeconds: ptr.To(int32(60))}
	}
	armed := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	cases := []struct {
		name string
		in   LockInput
		// want
		adopted  bool
		reason   string
		replicas int32
		obsGen   int64
		deadline *metav1.Time
		expired  bool
		pending  bool
		rejected string
	}{
		{name: "first pass adopts and arms", in: LockInput{Spec: spec(3), Generation: 1, Now: now},
			adopted: true, reason: ReasonInitialSnapshot, replicas: 3, obsGen: 1, deadline: armed(time.Minute)},
		{name: "converged and unchanged clears the deadline",
			in:       LockInput{Spec: spec(3), Generation: 1, Observed: ObservedFromSpec(spec(3)), ObservedGeneration: 1, Deadline: armed(time.Second), Converged: true, Now: now},
			replicas: 3, obsGen: 1},
		{name: "converged with a new spec adopts",
			in:      LockInput{Spec: spec(5), Generation: 2, Observed: ObservedFromSpec(spec(3)), ObservedGeneration: 1, Converged: true, Now: now},
			adopted: true, reason: ReasonSpecChanged, replicas: 5, obsGen: 2, deadline: armed(time.Minute)},
		{name: "not converged with a new spec keeps the target and arms",
			in:       LockInput{Spec: spec(5), Generation: 2, Observed: ObservedFromSpec(spec(3)), ObservedGeneration: 1, Now: now},
			replicas: 3, obsGen: 1, deadline: armed(time.Minute), pending: true},
		{name: "not converged, deadline armed and running: keep",
			in:       LockInput{Spec: spec(5), Generation: 2, Observed: ObservedFromSpec(spec(3)), ObservedGeneration: 1, Deadline: armed(time.Second), Now: now},
			replicas: 3, obsGen: 1, deadline: armed(time.Second), pending: true},
		{name: "deadline expired with a new spec adopts",
			in:      LockInput{Spec: spec(5), Generation: 2, Observed: ObservedFromSpec(spec(3)), ObservedGeneration: 1, Deadline: armed(-time.Second), Now: now},
			adopted: true, reason: ReasonRetryAfterDeadline, replicas: 5, obsGen: 2, deadline: armed(time.Minute)},
		{name: "deadline expired without a new spec reports expiry",
			in:       LockInput{Spec: spec(3), Generation: 1, Observed: ObservedFromSpec(spec(3)), ObservedGeneration: 1, Deadline: armed(-time.Second), Now: now},
			replicas: 3, obsGen: 1, deadline: armed(-time.Second), expired: true},
		{name: "converged with a refused version keeps the target, pending nothing",
			in:       LockInput{Spec: spec(5), Generation: 2, Observed: ObservedFromSpec(spec(3)), ObservedGeneration: 1, Converged: true, Now: now, VersionRejected: "refused"},
			replicas: 3, obsGen: 1, rejected: "refused"},
		{name: "deadline expired with a refused version reports expiry and the refusal",
			in:       LockInput{Spec: spec(5), Generation: 2, Observed: ObservedFromSpec(spec(3)), ObservedGeneration: 1, Deadline: armed(-time.Second), Now: now, VersionRejected: "refused"},
			replicas: 3, obsGen: 1, deadline: armed(-time.Second), expired: true, rejected: "refused"},
		{name: "not converged: a refused version stays pending until its turn",
			in:       LockInput{Spec: spec(5), Generation: 2, Observed: ObservedFromSpec(spec(3)), ObservedGeneration: 1, Now: now, VersionRejected: "refused"},
			replicas: 3, obsGen: 1, deadline: armed(time.Minute), pending: true},
		{name: "a refused first spec latches nothing and arms nothing",
			in:       LockInput{Spec: spec(3), Generation: 1, Now: now, VersionRejected: "refused"},
			rejected: "refused"},
		{name: "a generation that changes nothing latched is applied at once",
			in:       LockInput{Spec: spec(3), Generation: 4, Observed: ObservedFromSpec(spec(3)), ObservedGeneration: 1, Now: now},
			replicas: 3, obsGen: 4, deadline: armed(time.Minute)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := Decide(c.in)
			var replicas int32
			if l.Observed != nil {
				replicas = l.Observed.Replicas
			}
			if l.Adopted != c.adopted || l.AdoptReason != c.reason || replicas != c.replicas ||
				l.ObservedGeneration != c.obsGen || l.Expired != c.expired || l.Pending != c.pending || l.Rejected != c.rejected {
				t.Errorf("Decide = %+v", l)
			}
			if (l.Deadline == nil) != (c.deadline == nil) || (l.Deadline != nil && !l.Deadline.Equal(c.deadline)) {
				t.Errorf("deadline = %v, want %v", l.Deadline, c.deadline)
			}
			if c.pending && !strings.HasPrefix(l.PendingMessage, "generation 2 pending; adopted when generation 1 converges or at ") {
				t.Errorf("pending message = %q", l.PendingMessage)
			}
		})
	}
}

func TestObservedFromSpecLeavesOutUnlatchedFields(t *testing.T) {
	t.Parallel()
	spec := &etcdv1alpha2.EtcdClusterSpec{Version: "3.6.5",
		Storage:       etcdv1alpha2.StorageSpec{ReclaimPolicy: etcdv1alpha2.ReclaimPolicy("Retain")},
		ClientService: &etcdv1alpha2.ClientServiceSpec{Type: "NodePort"}}
	o := ObservedFromSpec(spec)
	if o.Replicas != 3 || o.Storage.ReclaimPolicy != "" {
		t.Errorf("observed = %+v", o)
	}
}

func TestTemplateCurrent(t *testing.T) {
	t.Parallel()
	o := ObservedFromSpec(&etcdv1alpha2.EtcdClusterSpec{Version: "3.6.5", PriorityClassName: "high"})
	m := &etcdv1alpha2.EtcdMemberSpec{ClusterName: "c", InitialCluster: "x=y", ClusterToken: "t", Bootstrap: true}
	if TemplateCurrent(m, o) {
		t.Error("an empty template is current")
	}
	ApplyTemplate(m, o)
	if !TemplateCurrent(m, o) {
		t.Error("an applied template is not current")
	}
	if m.InitialCluster != "x=y" || !m.Bootstrap || m.ClusterName != "c" {
		t.Errorf("ApplyTemplate changed identity fields: %+v", m)
	}
	o.Version = "3.6.6"
	if TemplateCurrent(m, o) {
		t.Error("a different version is current")
	}
}

func TestConverged(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		tweak func(*Scope)
		want  bool
	}{
		{"steady", func(*Scope) {}, true},
		{"no cluster ID", func(s *Scope) { s.ClusterID = "" }, false},
		{"below target", func(s *Scope) { s.Target = 5 }, false},
		{"learner present", func(s *Scope) { s.Etcd.Members[2].IsLearner = true }, false},
		{"member not ready", func(s *Scope) { s.Members[0].Ready = false }, false},
		{"member not updated", func(s *Scope) { s.Members[0].Updated = false }, false},
		{"template outdated", func(s *Scope) { s.Members[0].TemplateCurrent = false }, false},
		{"member being removed", func(s *Scope) { s.Members[0].RemovalReason = RemovalReasonScaleDown }, false},
		{"paused with a dormant member", func(s *Scope) {
			s.Target = 0
			s.Members = []Member{with(s.Members[0], func(m *Member) { m.Dormant = true })}
			s.Etcd.Members = s.Etcd.Members[:1]
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := steady3()
			c.tweak(&s)
			if got := Converged(&s); got != c.want {
				t.Errorf("Converged = %v, want %v", got, c.want)
			}
		})
	}
}
