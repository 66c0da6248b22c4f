package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/membership"
)

const (
	eventAlarmDisarmed      = "AlarmDisarmed"
	eventReplacementBackoff = "ReplacementBackoff"
)

// disarmCorrupt disarms the CORRUPT alarm of a member the replacement removed from etcd. The
// planner asks only once etcd no longer lists the member, so the alarm protects nothing; left
// armed it would keep the whole cluster refusing writes.
func (p *pass) disarmCorrupt(ctx context.Context, a membership.Action) error {
	alarm := etcdclient.Alarm{MemberID: a.MemberID, Type: etcdclient.AlarmCorrupt}
	if _, err := p.etcd.AlarmDisarm(ctx, alarm); err != nil {
		return waitingOn("AlarmDisarm", fmt.Errorf("disarming the CORRUPT alarm of %s: %w", etcdclient.FormatID(a.MemberID), err),
			membership.MembershipPoll, etcdclient.ErrNoLeader, etcdclient.ErrTimeout)
	}
	failpoint.Inject(failpoint.AlarmDisarmed)
	p.event(corev1.EventTypeNormal, eventAlarmDisarmed, fmt.Sprintf("disarmed the CORRUPT alarm of removed member %s", etcdclient.FormatID(a.MemberID)))
	return nil
}

// backoff records the back-off before a member that never started is replaced (written by the
// deferred status patch) and announces it once: each new back-off is a new member failing.
func (p *pass) backoff(a membership.Action) {
	p.cluster.Status.ReplacementBackoff = &etcdv1alpha2.ReplacementBackoff{
		Attempts: a.Backoff.Attempts, NotBefore: metav1.NewTime(a.Backoff.NotBefore),
	}
	p.event(corev1.EventTypeWarning, eventReplacementBackoff, a.Message)
}
