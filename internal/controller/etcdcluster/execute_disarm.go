package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/failpoint"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/step"
)

// eventAlarmDisarmed announces a disarmed alarm.
const eventAlarmDisarmed = "AlarmDisarmed"

// disarmCorrupt disarms the CORRUPT alarm of a member the replacement removed from etcd. The
// planner asks only once etcd no longer lists the member (or, for an alarm with member ID 0,
// once a keyspace hash comparison under it found every voter equal), so the alarm protects
// nothing; left armed it would keep the whole cluster refusing writes.
func (x *executor) disarmCorrupt(ctx context.Context, a membership.Action) (step.Result, error) {
	cli, err := x.etcd()
	if err != nil {
		return step.Result{}, err
	}
	alarm := etcdclient.Alarm{MemberID: a.MemberID, Type: etcdclient.AlarmCorrupt}
	if _, err := cli.AlarmDisarm(ctx, alarm); err != nil {
		return x.waitingOn("AlarmDisarm", fmt.Errorf("disarming the CORRUPT alarm of %s: %w", etcdclient.FormatID(a.MemberID), err),
			membership.MembershipPoll, etcdclient.ErrNoLeader, etcdclient.ErrTimeout)
	}
	failpoint.Inject(ctx, failpoint.AlarmDisarmed)
	subject := "of removed member " + etcdclient.FormatID(a.MemberID)
	if a.MemberID == 0 {
		// docs/design/healing.md, "Keyspace hash comparison": an alarm that names no member.
		subject = "with member ID 0: the keyspace hash comparison found every voter equal"
	}
	x.event(corev1.EventTypeNormal, eventAlarmDisarmed, "disarmed the CORRUPT alarm "+subject)
	return step.Continue, nil
}
