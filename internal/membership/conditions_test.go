package membership

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

type want struct {
	status metav1.ConditionStatus
	reason string
}

func TestConditions(t *testing.T) {
	t.Parallel()
	seed := with(mem("s", 1), func(m *Member) { m.Bootstrap = true })
	cases := []struct {
		name                           string
		scope                          func() Scope
		lock                           Lock
		available, progressing, degrad want
	}{
		{"steady 3", steady3, Lock{},
			want{metav1.ConditionTrue, ReasonQuorumHealthy}, want{metav1.ConditionFalse, ReasonReconciled}, want{metav1.ConditionFalse, ReasonQuorumHealthy}},
		{"steady 3 while a CA rotation waits", func() Scope {
			s := steady3()
			s.TLS.Rotating = []string{"CA rotation of Secret c-ca: step 3 of 3"}
			return s
		}, Lock{}, want{metav1.ConditionTrue, ReasonQuorumHealthy}, want{metav1.ConditionTrue, ReasonRotatingCA}, want{metav1.ConditionFalse, ReasonQuorumHealthy}},
		{"a roll during a CA rotation", func() Scope {
			s := rolling3()
			s.TLS.Rotating = []string{"CA rotation of Secret c-ca: step 1 of 3"}
			return s
		}, Lock{}, want{metav1.ConditionTrue, ReasonQuorumHealthy}, want{metav1.ConditionTrue, ReasonRollingUpdate}, want{metav1.ConditionFalse, ReasonQuorumHealthy}},
		{"first pass of a new cluster", func() Scope { return Scope{Target: 3} }, Lock{Adopted: true, AdoptReason: ReasonInitialSnapshot},
			want{metav1.ConditionFalse, ReasonBootstrapping}, want{metav1.ConditionTrue, ReasonInitialSnapshot}, want{metav1.ConditionFalse, ReasonQuorumHealthy}},
		{"seed formed, 1 of 3: not available", func() Scope {
			return Scope{Target: 3, ClusterID: "cid", Bootstrapping: true, Members: []Member{seed}, Etcd: healthyEtcd(1, voter(1, "s"))}
		}, Lock{}, want{metav1.ConditionFalse, ReasonBelowTargetQuorum}, want{metav1.ConditionTrue, ReasonBootstrapping}, want{metav1.ConditionFalse, ReasonQuorumHealthy}},
		{"seed not formed yet", func() Scope {
			return Scope{Target: 3, Members: []Member{with(seed, func(m *Member) { m.PodRunning = false; m.Ready = false })}}
		}, Lock{}, want{metav1.ConditionFalse, ReasonBootstrapping}, want{metav1.ConditionTrue, ReasonWaitingForSeed}, want{metav1.ConditionFalse, ReasonQuorumHealthy}},
		{"one of three down: available, degraded", func() Scope {
			s := steady3()
			s.Members[1].Ready = false
			return s
		}, Lock{}, want{metav1.ConditionTrue, ReasonQuorumAvailable}, want{metav1.ConditionTrue, ReasonScalingUp}, want{metav1.ConditionTrue, ReasonMembersUnhealthy}},
		{"the member a roll restarted last is coming back", func() Scope {
			s := steady3()
			s.Members[1].Ready = false
			s.Rolling = true
			return s
		}, Lock{}, want{metav1.ConditionTrue, ReasonQuorumAvailable}, want{metav1.ConditionTrue, ReasonRollingUpdate}, want{metav1.ConditionTrue, ReasonMembersUnhealthy}},
		{"two of three down: quorum lost", func() Scope {
			s := steady3()
			s.Members[1].Ready = false
			s.Members[2].Ready = false
			return s
		}, Lock{}, want{metav1.ConditionFalse, ReasonQuorumLost}, want{metav1.ConditionTrue, ReasonScalingUp}, want{metav1.ConditionTrue, ReasonQuorumLost}},
		{"quorum gate refusal", func() Scope {
			s := steady3()
			s.Target = 2
			delete(s.Etcd.Statuses, 1)
			delete(s.Etcd.Statuses, 2)
			return s
		}, Lock{}, want{metav1.ConditionTrue, ReasonQuorumHealthy}, want{metav1.ConditionTrue, ReasonWaitingForHealthyMembers}, want{metav1.ConditionFalse, ReasonQuorumHealthy}},
		{"paused", func() Scope {
			s := steady3()
			s.Target, s.Members, s.Etcd, s.PVCs = 0, []Member{with(s.Members[0], func(m *Member) { m.Dormant = true; m.Ready = false })}, Etcd{}, s.PVCs[:1]
			return s
		}, Lock{}, want{metav1.ConditionFalse, ReasonPaused}, want{metav1.ConditionFalse, ReasonPaused}, want{metav1.ConditionFalse, ReasonPaused}},
		{"paused and the dormant PVC is gone", func() Scope {
			s := steady3()
			s.Target, s.Members, s.Etcd, s.PVCs = 0, []Member{with(s.Members[0], func(m *Member) { m.Dormant = true; m.Ready = false })}, Etcd{}, nil
			return s
		}, Lock{}, want{metav1.ConditionFalse, ReasonAllMembersLost}, want{metav1.ConditionFalse, ReasonAllMembersLost}, want{metav1.ConditionTrue, ReasonAllMembersLost}},
		{"everything gone", func() Scope { return Scope{Target: 3, ClusterID: "cid"} }, Lock{},
			want{metav1.ConditionFalse, ReasonAllMembersLost}, want{metav1.ConditionFalse, ReasonAllMembersLost}, want{metav1.ConditionTrue, ReasonAllMembersLost}},
		{"pods ready, etcd silent", func() Scope { s := steady3(); s.Etcd = Etcd{}; return s }, Lock{},
			want{metav1.ConditionUnknown, ReasonClusterUnreachable}, want{metav1.ConditionTrue, ReasonScalingUp}, want{metav1.ConditionFalse, ReasonQuorumHealthy}},
		{"deadline exceeded, bootstrap", func() Scope {
			return Scope{Target: 3, Members: []Member{with(seed, func(m *Member) { m.PodRunning = false })}}
		},
			Lock{Expired: true}, want{metav1.ConditionFalse, ReasonBootstrapping}, want{metav1.ConditionFalse, ReasonBootstrapStalled}, want{metav1.ConditionFalse, ReasonQuorumHealthy}},
		{"deadline exceeded, formed", func() Scope { s := steady3(); s.Target = 5; return s },
			Lock{Expired: true}, want{metav1.ConditionTrue, ReasonQuorumAvailable}, want{metav1.ConditionFalse, ReasonDeadlineExceeded}, want{metav1.ConditionFalse, ReasonQuorumHealthy}},
		// A held member keeps serving: it counts as a Ready voter, nothing is in progress, and
		// Degraded says what a person must decide.
		{"foreign deletion held", func() Scope { s := steady3(); s.Members[2].Deleting = true; return s }, Lock{},
			want{metav1.ConditionTrue, ReasonQuorumHealthy}, want{metav1.ConditionFalse, ReasonReconciled}, want{metav1.ConditionTrue, ReasonMemberDeletionBlocked}},
		{"every deletion held", func() Scope {
			s := steady3()
			for i := range s.Members {
				s.Members[i].Deleting = true
			}
			return s
		}, Lock{}, want{metav1.ConditionTrue, ReasonQuorumHealthy}, want{metav1.ConditionFalse, ReasonReconciled}, want{metav1.ConditionTrue, ReasonMemberDeletionBlocked}},
		{"seed unschedulable: degraded before the cluster forms", func() Scope {
			return Scope{Target: 1, Members: []Member{with(seed, func(m *Member) { unschedulable(m); m.PodRunning = false })}}
		}, Lock{}, want{metav1.ConditionFalse, ReasonBootstrapping}, want{metav1.ConditionTrue, ReasonWaitingForSeed}, want{metav1.ConditionTrue, ReasonMemberUnschedulable}},
		{"one of three unschedulable", func() Scope { s := steady3(); unschedulable(&s.Members[2]); return s }, Lock{},
			want{metav1.ConditionTrue, ReasonQuorumAvailable}, want{metav1.ConditionTrue, ReasonScalingUp}, want{metav1.ConditionTrue, ReasonMemberUnschedulable}},
		{"cert-manager missing, new cluster", func() Scope {
			return Scope{Target: 3, TLS: TLS{CertManagerMissing: true, MissingSecrets: []string{"c-peer-tls", "c-server-tls"}}}
		}, Lock{}, want{metav1.ConditionFalse, ReasonCertManagerNotInstalled}, want{metav1.ConditionTrue, ReasonWaitingForSeed}, want{metav1.ConditionTrue, ReasonTLSSecretMissing}},
		{"a Secret of a formed cluster deleted", func() Scope { s := steady3(); s.TLS.MissingSecrets = []string{"byo"}; return s }, Lock{},
			want{metav1.ConditionTrue, ReasonQuorumHealthy}, want{metav1.ConditionFalse, ReasonReconciled}, want{metav1.ConditionTrue, ReasonTLSSecretMissing}},
		{"an invalid certificate on a new cluster", func() Scope {
			return Scope{Target: 3, TLS: TLS{Certificates: []CertificateProblem{{Message: "Secret byo, key ca.crt: missing", Holds: true}}}}
		}, Lock{}, want{metav1.ConditionFalse, ReasonBootstrapping}, want{metav1.ConditionTrue, ReasonWaitingForSeed}, want{metav1.ConditionTrue, ReasonCertificateInvalid}},
		{"a certificate of a formed cluster expiring within a week", func() Scope {
			s := steady3()
			s.TLS.Certificates = []CertificateProblem{{Message: "Secret byo, key tls.crt: expires soon"}}
			return s
		}, Lock{}, want{metav1.ConditionTrue, ReasonQuorumHealthy}, want{metav1.ConditionFalse, ReasonReconciled}, want{metav1.ConditionTrue, ReasonCertificateInvalid}},
		{"auth on in etcd, not in the spec", func() Scope { s := steady3(); s.Access.AuthRequiredNotConfigured = true; return s }, Lock{},
			want{metav1.ConditionFalse, ReasonAuthRequiredNotConfigured}, want{metav1.ConditionFalse, ReasonAuthRequiredNotConfigured}, want{metav1.ConditionTrue, ReasonAuthRequiredNotConfigured}},
		{"auth on in a restored seed's etcd, not in the spec", func() Scope {
			return Scope{Target: 3, Members: []Member{with(seed, func(m *Member) { m.Ready = false })}, Access: Access{AuthRequiredNotConfigured: true}}
		}, Lock{}, want{metav1.ConditionFalse, ReasonAuthRequiredNotConfigured}, want{metav1.ConditionFalse, ReasonAuthRequiredNotConfigured}, want{metav1.ConditionTrue, ReasonAuthRequiredNotConfigured}},
		{"version change refused on a converged cluster", steady3, Lock{Rejected: "version 3.7.3 skips a minor"},
			want{metav1.ConditionTrue, ReasonQuorumHealthy}, want{metav1.ConditionFalse, ReasonVersionChangeRejected}, want{metav1.ConditionFalse, ReasonQuorumHealthy}},
		{"a refused version change outranks the deadline it was met at", func() Scope { s := steady3(); s.Target = 5; return s },
			Lock{Expired: true, Rejected: "version 3.7.3 skips a minor"}, want{metav1.ConditionTrue, ReasonQuorumAvailable}, want{metav1.ConditionFalse, ReasonVersionChangeRejected}, want{metav1.ConditionFalse, ReasonQuorumHealthy}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := c.scope()
			conds := Conditions(ConditionInput{Scope: &s, Action: Next(s), Lock: c.lock, Generation: 7})
			check := func(i int, typ string, w want) {
				got := conds[i]
				if got.Type != typ || got.Status != w.status || got.Reason != w.reason || got.ObservedGeneration != 7 || got.Message == "" {
					t.Errorf("%s = %s/%s (%q), want %s/%s", typ, got.Status, got.Reason, got.Message, w.status, w.reason)
				}
			}
			check(0, etcdv1alpha2.ConditionAvailable, c.available)
			check(1, etcdv1alpha2.ConditionProgressing, c.progressing)
			check(2, etcdv1alpha2.ConditionDegraded, c.degrad)
		})
	}
}

// TestConditionsAreDeterministic checks that member order and the clock do not change messages.
func TestConditionsAreDeterministic(t *testing.T) {
	t.Parallel()
	s := steady3()
	s.Members[0].Ready, s.Members[2].Ready = false, false
	a := Conditions(ConditionInput{Scope: &s, Action: Next(s)})
	s2 := steady3()
	s2.Members[0].Ready, s2.Members[2].Ready = false, false
	s2.Members[0], s2.Members[2] = s2.Members[2], s2.Members[0]
	s2.Now = s2.Now.Add(time.Hour)
	b := Conditions(ConditionInput{Scope: &s2, Action: Next(s2)})
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("condition %d differs:\n %+v\n %+v", i, a[i], b[i])
		}
	}
	if want := "1 of 3 voters Ready, quorum needs 2; not Ready: a, c"; a[0].Message != want {
		t.Errorf("Available message = %q, want %q", a[0].Message, want)
	}
}

func TestCount(t *testing.T) {
	t.Parallel()
	s := steady3()
	s.Target = 4
	s.Members = append(s.Members, with(mem("d", 4), func(m *Member) { m.Ready = false; m.Unhealthy = true }))
	s.Etcd = healthyEtcd(1, voter(1, "a"), voter(2, "b"), voter(3, "c"), learner(4, "d", true))
	c := Count(&s)
	if c != (Counts{Voters: 3, ReadyVoters: 3, Updated: 4, Broken: 1}) {
		t.Errorf("Count = %+v", c)
	}
}

// unschedulable marks m as the member controller does once its Pod stayed unschedulable for the
// pending grace.
func unschedulable(m *Member) {
	m.Ready, m.PodReady, m.Unhealthy = false, false, true
	m.HealthyReason = "Unschedulable"
	m.HealthyMessage = "the Pod cannot be scheduled: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector"
}

// TestDegradedPrecedence follows the order of docs/design/conditions-and-events.md: each problem is added to a
// scope that has every lower one, and must win over them.
func TestDegradedPrecedence(t *testing.T) {
	t.Parallel()
	steps := []struct {
		reason string
		add    func(*Scope)
	}{
		{ReasonMembersUnhealthy, func(s *Scope) { s.Members[0].Unhealthy = true; s.Members[0].HealthyReason = "CrashLoop" }},
		{ReasonMemberUnschedulable, func(s *Scope) { unschedulable(&s.Members[1]) }},
		{ReasonMemberDeletionBlocked, func(s *Scope) { s.Members[2].Deleting = true }},
		{ReasonAuthRequiredNotConfigured, func(s *Scope) { s.Access.AuthRequiredNotConfigured = true }},
		{ReasonCertificateInvalid, func(s *Scope) {
			s.TLS.Certificates = []CertificateProblem{{Message: "Secret c-peer, key ca.crt: missing; add it", Holds: true}}
		}},
		{ReasonTLSSecretMissing, func(s *Scope) { s.TLS.MissingSecrets = []string{"c-server-tls"} }},
		{ReasonAlarmActive, func(s *Scope) {
			s.Etcd.Alarms = []etcdclient.Alarm{{MemberID: 2, Type: etcdclient.AlarmNoSpace}}
		}},
		{ReasonQuorumLost, func(s *Scope) { s.Members[0].Ready, s.Members[2].Ready = false, false }},
	}
	// Five voters: one not Ready and one whose deletion is held (it still serves) leave a quorum
	// of three; three not Ready do not.
	s := Scope{Target: 5, ClusterID: "cid", Now: t0.Add(time.Hour),
		Members: []Member{mem("a", 1), mem("b", 2), mem("c", 3), mem("d", 4), mem("e", 5)},
		Etcd:    healthyEtcd(1, voter(1, "a"), voter(2, "b"), voter(3, "c"), voter(4, "d"), voter(5, "e"))}
	for _, st := range steps {
		st.add(&s)
		got := degraded(ConditionInput{Scope: &s})
		if got.Status != metav1.ConditionTrue || got.Reason != st.reason {
			t.Errorf("after adding %s: Degraded = %s/%s (%s)", st.reason, got.Status, got.Reason, got.Message)
		}
	}
}

// TestUnschedulableMessageNamesMembersAndCause: the message is what a person reads to fix the
// constraint, so it names every unschedulable member, sorted, with the scheduler's words.
func TestUnschedulableMessageNamesMembersAndCause(t *testing.T) {
	t.Parallel()
	// Before the cluster forms, so that two members down is not also a quorum loss.
	s := Scope{Target: 3, Members: []Member{mem("c", 2), mem("a", 1)}}
	unschedulable(&s.Members[0])
	unschedulable(&s.Members[1])
	s.Members[1].HealthyMessage = "the Pod cannot be scheduled: 0/3 nodes are available: 3 Insufficient cpu"
	got := degraded(ConditionInput{Scope: &s}).Message
	want := "member a: the Pod cannot be scheduled: 0/3 nodes are available: 3 Insufficient cpu; " +
		"member c: the Pod cannot be scheduled: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector"
	if got != want {
		t.Errorf("message = %q\nwant      %q", got, want)
	}
}
