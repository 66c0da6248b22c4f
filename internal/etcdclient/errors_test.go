package etcdclient_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want error
	}{
		// As they cross gRPC (status errors) and as clientv3 hands them over (EtcdError).
		{"learner not ready (gRPC)", rpctypes.ErrGRPCLearnerNotReady, etcdclient.ErrLearnerNotReady},
		{"learner not ready (client)", rpctypes.ErrMemberLearnerNotReady, etcdclient.ErrLearnerNotReady},
		{"member not found", rpctypes.ErrGRPCMemberNotFound, etcdclient.ErrMemberNotFound},
		{"peer URL exists", rpctypes.ErrPeerURLExist, etcdclient.ErrPeerURLExists},
		{"member ID exists", rpctypes.ErrGRPCMemberExist, etcdclient.ErrMemberExists},
		{"member ID exists is a peer URL exists", rpctypes.ErrMemberExist, etcdclient.ErrPeerURLExists},
		{"not a learner", rpctypes.ErrGRPCMemberNotLearner, etcdclient.ErrMemberNotLearner},
		{"too many learners", rpctypes.ErrTooManyLearners, etcdclient.ErrTooManyLearners},
		{"not enough started", rpctypes.ErrGRPCMemberNotEnoughStarted, etcdclient.ErrNotEnoughStartedMembers},
		{"unhealthy", rpctypes.ErrGRPCUnhealthy, etcdclient.ErrUnhealthyCluster},
		{"no leader", rpctypes.ErrGRPCNoLeader, etcdclient.ErrNoLeader},
		{"leader changed", rpctypes.ErrLeaderChanged, etcdclient.ErrNoLeader},
		{"not leader", rpctypes.ErrGRPCNotLeader, etcdclient.ErrNotLeader},
		{"bad transferee", rpctypes.ErrGRPCBadLeaderTransferee, etcdclient.ErrBadLeaderTransferee},
		{"request timed out", rpctypes.ErrGRPCTimeout, etcdclient.ErrTimeout},
		{"timed out, connection lost", rpctypes.ErrTimeoutDueToConnectionLost, etcdclient.ErrTimeout},
		{"no space", rpctypes.ErrGRPCNoSpace, etcdclient.ErrNoSpace},
		{"corrupt", rpctypes.ErrGRPCCorrupt, etcdclient.ErrCorrupt},
		{"auth failed", rpctypes.ErrGRPCAuthFailed, etcdclient.ErrAuthFailed},
		{"invalid token", rpctypes.ErrGRPCInvalidAuthToken, etcdclient.ErrAuthFailed},
		{"permission denied", rpctypes.ErrGRPCPermissionDenied, etcdclient.ErrPermissionDenied},
		{"bad URLs", rpctypes.ErrGRPCMemberBadURLs, etcdclient.ErrInvalidConfig},
		{"stopped", rpctypes.ErrGRPCStopped, etcdclient.ErrUnavailable},
		{"deadline", fmt.Errorf("calling: %w", context.DeadlineExceeded), etcdclient.ErrTimeout},
		{"gRPC deadline", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), etcdclient.ErrTimeout},
		{"connection refused", status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:2379: connect: connection refused"`), etcdclient.ErrUnavailable},
		{"closing", status.Error(codes.Canceled, "grpc: the client connection is closing"), etcdclient.ErrClosed},
		{"caller canceled", context.Canceled, nil},
		{"unknown", errors.New("something else"), nil},
		{"already classified", etcdclient.NewError("MemberRemove", etcdclient.ErrNoLeader), etcdclient.ErrNoLeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := etcdclient.Classify(tt.err); !errors.Is(got, tt.want) || (tt.want == nil && got != nil) {
				t.Errorf("Classify(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestErrorMatchesOnlyItsKind(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("promoting etcd-abc12: %w", etcdclient.NewError("MemberPromote", etcdclient.ErrLearnerNotReady))
	if !errors.Is(err, etcdclient.ErrLearnerNotReady) {
		t.Fatalf("%v does not match ErrLearnerNotReady", err)
	}
	if errors.Is(err, etcdclient.ErrMemberNotFound) {
		t.Fatalf("%v matches ErrMemberNotFound", err)
	}
	var e *etcdclient.Error
	if !errors.As(err, &e) || e.Op != "MemberPromote" || !errors.Is(e.Kind(), etcdclient.ErrLearnerNotReady) {
		t.Fatalf("errors.As: %#v", e)
	}
	if got, want := e.Error(), "etcd MemberPromote: etcd learner is not in sync with the leader"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}

func TestSanitize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		secrets  []string
	}{
		{
			in:   `connection error: desc = "transport: Error while dialing: dial tcp 10.244.1.5:2379: connect: connection refused"`,
			want: `connection error: desc = "transport: Error while dialing: dial tcp <address>: connect: connection refused"`,
		},
		{in: "failed to dial endpoint https://etcd-0.etcd.ns.svc:2379 with maintenance client", want: "failed to dial endpoint <url> with maintenance client"},
		{in: "dial tcp [fd00::5]:2379: i/o timeout", want: "dial tcp <address>: i/o timeout"},
		{in: "lookup etcd-0.etcd.tenant.svc:2379 on 10.96.0.10:53: no such host", want: "lookup <address> on <address>: no such host"},
		{in: "http://root:" + "s3cret" + "@10.0.0.1:2379 said no", want: "<url> said no"},
		{in: "password s3cret rejected", secrets: []string{"s3cret"}, want: "password <redacted> rejected"},
		{in: "etcdserver: can only promote a learner member which is in sync with leader", want: "etcdserver: can only promote a learner member which is in sync with leader"},
		{in: "etcd version 3.6.16 is fine", want: "etcd version 3.6.16 is fine"},
		{in: "peer 192.168.0.7 unreachable", want: "peer <address> unreachable"},
	}
	for _, tt := range tests {
		if got := etcdclient.Sanitize(tt.in, tt.secrets...); got != tt.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFormatParseID(t *testing.T) {
	t.Parallel()
	const id = uint64(0x8e9e05c52164694d)
	s := etcdclient.FormatID(id)
	if s != "8e9e05c52164694d" {
		t.Fatalf("FormatID = %q", s)
	}
	got, err := etcdclient.ParseID(s)
	if err != nil || got != id {
		t.Fatalf("ParseID(%q) = %x, %v", s, got, err)
	}
	if _, err := etcdclient.ParseID("not-hex"); err == nil {
		t.Fatalf("ParseID accepted not-hex")
	}
	m := etcdclient.Member{ID: id}
	if m.IDHex() != s || m.Started() {
		t.Fatalf("IDHex/Started of an unstarted member: %q %v", m.IDHex(), m.Started())
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	t.Parallel()
	if _, err := etcdclient.New(t.Context(), etcdclient.Config{}); !errors.Is(err, etcdclient.ErrInvalidConfig) {
		t.Errorf("New without endpoints: %v, want ErrInvalidConfig", err)
	}
	if _, err := etcdclient.New(t.Context(), etcdclient.Config{Endpoints: []string{"https://127.0.0.1:2379"}, TLS: tlsConfig()}); !errors.Is(err, etcdclient.ErrTLSDigestRequired) {
		t.Errorf("New with TLS and no digest: %v, want ErrTLSDigestRequired", err)
	}
}

func TestConnAfterClose(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1; New does not block on connecting.
	c, err := etcdclient.New(t.Context(), etcdclient.Config{Endpoints: []string{"http://127.0.0.1:1"}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := c.Status(t.Context(), "http://127.0.0.1:1"); !errors.Is(err, etcdclient.ErrClosed) {
		t.Errorf("Status after Close: %v, want ErrClosed", err)
	}
	if _, err := c.MemberList(t.Context()); !errors.Is(err, etcdclient.ErrClosed) {
		t.Errorf("MemberList after Close: %v, want ErrClosed", err)
	}
	if strings.Contains(fmt.Sprint(c.Close()), "127.0.0.1") {
		t.Errorf("second Close leaked an address")
	}
}

func TestAlarmDisarmRefusesDisarmAll(t *testing.T) {
	t.Parallel()
	c, err := etcdclient.New(t.Context(), etcdclient.Config{Endpoints: []string{"http://127.0.0.1:1"}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	// clientv3 would read a zero alarm as "disarm every alarm".
	if _, err := c.AlarmDisarm(t.Context(), etcdclient.Alarm{}); !errors.Is(err, etcdclient.ErrInvalidConfig) {
		t.Errorf("AlarmDisarm(zero): %v, want ErrInvalidConfig", err)
	}
	if _, err := c.AlarmDisarm(t.Context(), etcdclient.Alarm{MemberID: 7}); !errors.Is(err, etcdclient.ErrInvalidConfig) {
		t.Errorf("AlarmDisarm(no type): %v, want ErrInvalidConfig", err)
	}
}
