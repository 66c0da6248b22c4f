package etcdclient_test

import (
	"context"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdconn"
)

// TestDisarmUnattributedCorruptAlarm raises a CORRUPT alarm with member ID 0 on a real cluster,
// as etcd 3.5.7 and later raise it when a hash mismatch names no member, and disarms it through
// the adapter. The adapter refused any alarm of member 0 before (found by the e2e test
// TestPVCMemberKeyspaceDiverged: the operator retried the disarm forever).
func TestDisarmUnattributedCorruptAlarm(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c := startCluster(ctx, t, 1)
	raw, err := etcdconn.New(ctx, etcdconn.Options{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = raw.Close() }()
	activate := &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: 0, Alarm: pb.AlarmType_CORRUPT}
	if _, err := pb.NewMaintenanceClient(raw.ActiveConnection()).Alarm(ctx, activate); err != nil {
		t.Fatalf("raising CORRUPT for member 0: %v", err)
	}
	cli := dial(ctx, t, c.Endpoints())
	want := etcdclient.Alarm{MemberID: 0, Type: etcdclient.AlarmCorrupt}
	if alarms, err := cli.AlarmList(ctx); err != nil || len(alarms) != 1 || alarms[0] != want {
		t.Fatalf("AlarmList: %v, %v; want %v", alarms, err, want)
	}
	if got, err := cli.AlarmDisarm(ctx, want); err != nil || len(got) != 1 || got[0] != want {
		t.Fatalf("AlarmDisarm(%v): %v, %v", want, got, err)
	}
	if alarms, err := cli.AlarmList(ctx); err != nil || len(alarms) != 0 {
		t.Errorf("AlarmList after the disarm: %v, %v; want none", alarms, err)
	}
}
