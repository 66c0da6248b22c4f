package etcdclient

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sentinel errors. Every error a Client returns matches at most one of them with errors.Is;
// an error matching none is unclassified (and should be treated as transient).
var (
	// ErrMemberNotFound: the member ID is not in the cluster. For an idempotent remove this
	// means success.
	ErrMemberNotFound = errors.New("etcd member not found")
	// ErrPeerURLExists: a member with that peer URL exists already. For an idempotent add this
	// means a previous pass added it.
	ErrPeerURLExists = errors.New("etcd peer URL exists")
	// ErrMemberExists: the new member's ID is taken. etcd derives the ID of a member added at
	// runtime from its peer URLs and the current second, so a retried add of the same peer URL
	// within the same second reports this instead of ErrPeerURLExists; it therefore also
	// matches ErrPeerURLExists, and callers treating an add as idempotent check only that.
	ErrMemberExists = fmt.Errorf("etcd member ID exists (same peer URLs added within the same second): %w", ErrPeerURLExists)
	// ErrMemberNotLearner: MemberPromote named a voter.
	ErrMemberNotLearner = errors.New("etcd member is not a learner")
	// ErrLearnerNotReady: the learner has not caught up with the leader; promote again later.
	ErrLearnerNotReady = errors.New("etcd learner is not in sync with the leader")
	// ErrTooManyLearners: etcd admits one learner at a time (--max-learners).
	ErrTooManyLearners = errors.New("etcd cluster has too many learners")
	// ErrNotEnoughStartedMembers: the change would leave fewer started voters than a quorum
	// (strict reconfiguration check).
	ErrNotEnoughStartedMembers = errors.New("etcd has not enough started members for the change")
	// ErrUnhealthyCluster: the strict reconfiguration check refused the change because the
	// leader is not (or not for long enough) connected to the voters the change needs.
	ErrUnhealthyCluster = errors.New("etcd cluster is unhealthy")
	// ErrNoLeader: the cluster has no leader (no quorum, or an election is running).
	ErrNoLeader = errors.New("etcd cluster has no leader")
	// ErrNotLeader: a leader-only call reached a follower.
	ErrNotLeader = errors.New("etcd member is not the leader")
	// ErrBadLeaderTransferee: MoveLeader named a learner or an unknown member.
	ErrBadLeaderTransferee = errors.New("etcd cannot move leadership to that member")
	// ErrTimeout: the call did not complete within its timeout, or etcd timed out the request
	// (it may still be applied later).
	ErrTimeout = errors.New("etcd call timed out")
	// ErrUnavailable: no connection to the member or cluster could be used.
	ErrUnavailable = errors.New("etcd is unavailable")
	// ErrNoSpace: a NOSPACE alarm is active and etcd refuses writes.
	ErrNoSpace = errors.New("etcd database space exceeded")
	// ErrCorrupt: a CORRUPT alarm is active.
	ErrCorrupt = errors.New("etcd cluster is corrupt")
	// ErrAuthFailed: the credentials were rejected or the token is invalid.
	ErrAuthFailed = errors.New("etcd authentication failed")
	// ErrPermissionDenied: the authenticated user may not make the call.
	ErrPermissionDenied = errors.New("etcd permission denied")
	// ErrAuthRequired: authentication is on and the call carried no credentials.
	ErrAuthRequired = errors.New("etcd authentication is on and the call carried no credentials")
	// ErrInvalidConfig: the request or the client configuration is invalid (e.g. bad peer URLs).
	ErrInvalidConfig = errors.New("invalid etcd request or configuration")
	// ErrClosed: the client was closed (by the Pool when its key changed or its cluster was
	// forgotten).
	ErrClosed = errors.New("etcd client is closed")
)

// Error is the error every Client call returns: the operation, the sentinel it matches, and a
// message from which addresses and credentials were removed. Unwrap returns the original error
// (for context.DeadlineExceeded and the like); its text is not sanitised, so never print it.
type Error struct {
	// Op is the call, e.g. "MemberPromote".
	Op   string
	kind error
	msg  string
	err  error
}

// Error returns "etcd <Op>: <sanitised message>".
func (e *Error) Error() string {
	return "etcd " + e.Op + ": " + e.msg
}

// Is matches the error's sentinel (and what the sentinel wraps: ErrMemberExists is also
// ErrPeerURLExists).
func (e *Error) Is(target error) bool {
	return e.kind != nil && errors.Is(e.kind, target)
}

// Unwrap returns the original error.
func (e *Error) Unwrap() error { return e.err }

// Kind returns the sentinel the error matches, or nil when it is unclassified.
func (e *Error) Kind() error { return e.kind }

// NewError builds a classified Error; fakes use it to fail the way Conn fails.
func NewError(op string, kind error) error {
	msg := "unclassified error"
	if kind != nil {
		msg = kind.Error()
	}
	return &Error{Op: op, kind: kind, msg: msg}
}

// serverErrors maps etcd's server errors (compared by their description, which is what
// crosses gRPC) to sentinels.
var serverErrors = map[error]error{
	rpctypes.ErrMemberNotFound:             ErrMemberNotFound,
	rpctypes.ErrPeerURLExist:               ErrPeerURLExists,
	rpctypes.ErrMemberExist:                ErrMemberExists,
	rpctypes.ErrMemberNotLearner:           ErrMemberNotLearner,
	rpctypes.ErrMemberLearnerNotReady:      ErrLearnerNotReady,
	rpctypes.ErrTooManyLearners:            ErrTooManyLearners,
	rpctypes.ErrMemberNotEnoughStarted:     ErrNotEnoughStartedMembers,
	rpctypes.ErrUnhealthy:                  ErrUnhealthyCluster,
	rpctypes.ErrNoLeader:                   ErrNoLeader,
	rpctypes.ErrLeaderChanged:              ErrNoLeader,
	rpctypes.ErrNotLeader:                  ErrNotLeader,
	rpctypes.ErrBadLeaderTransferee:        ErrBadLeaderTransferee,
	rpctypes.ErrTimeout:                    ErrTimeout,
	rpctypes.ErrTimeoutDueToLeaderFail:     ErrTimeout,
	rpctypes.ErrTimeoutDueToConnectionLost: ErrTimeout,
	rpctypes.ErrTimeoutWaitAppliedIndex:    ErrTimeout,
	rpctypes.ErrStopped:                    ErrUnavailable,
	rpctypes.ErrNoSpace:                    ErrNoSpace,
	rpctypes.ErrCorrupt:                    ErrCorrupt,
	rpctypes.ErrAuthFailed:                 ErrAuthFailed,
	rpctypes.ErrInvalidAuthToken:           ErrAuthFailed,
	rpctypes.ErrPermissionDenied:           ErrPermissionDenied,
	rpctypes.ErrUserEmpty:                  ErrAuthRequired,
	rpctypes.ErrMemberBadURLs:              ErrInvalidConfig,
}

// serverErrorsByDesc indexes serverErrors by description.
var serverErrorsByDesc = func() map[string]error {
	m := make(map[string]error, len(serverErrors))
	for server, sentinel := range serverErrors {
		m[rpctypes.ErrorDesc(server)] = sentinel
	}
	return m
}()

// Classify maps an error from clientv3 (or from etcd over gRPC) to its sentinel, or nil when it
// has none. It recognises etcd's server errors by description, as clientv3's rpctypes.Error
// does, so it works on gRPC status errors and on rpctypes.EtcdError values alike.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e.kind
	}
	if s, ok := serverErrorsByDesc[rpctypes.ErrorDesc(err)]; ok {
		return s
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return ErrTimeout
	case errors.Is(err, context.Canceled):
		return nil // the caller gave up; nothing to say about etcd
	}
	if strings.Contains(err.Error(), "invalid URL") || strings.Contains(err.Error(), "URL scheme must be") {
		return ErrInvalidConfig // clientv3 checks peer URLs before sending
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.DeadlineExceeded:
			return ErrTimeout
		case codes.Unavailable:
			return ErrUnavailable
		case codes.Unauthenticated:
			return ErrAuthFailed
		case codes.PermissionDenied:
			return ErrPermissionDenied
		case codes.Canceled:
			if strings.Contains(st.Message(), "client connection is closing") {
				return ErrClosed
			}
		}
	}
	return nil
}

// classify wraps err as an *Error for op, with a sanitised message.
func classify(op string, err error, secrets []string) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Op: op, kind: Classify(err), msg: Sanitize(rpctypes.ErrorDesc(err), secrets...), err: err}
}

var (
	urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s,;"'\]\)]+`)
	// host:port with an IPv4, bracketed IPv6 or dotted DNS host; and bare IPv4 addresses.
	hostPortPattern = regexp.MustCompile(`(\[[0-9a-fA-F:.%]+\]|\b[0-9]{1,3}(\.[0-9]{1,3}){3}\b|\b[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)+)(:[0-9]+)?|\b[0-9]{1,3}(\.[0-9]{1,3}){3}\b`)
)

// Sanitize removes URLs, addresses and the given secrets from an error message, so that it can
// go into a condition, an Event or a log line: credentials must never leak there, and addresses
// change between passes (a Pod IP), which would make messages flap.
func Sanitize(msg string, secrets ...string) string {
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "<redacted>")
		}
	}
	msg = urlPattern.ReplaceAllString(msg, "<url>")
	return hostPortPattern.ReplaceAllStringFunc(msg, func(m string) string {
		if !strings.ContainsAny(m, ":[") && !looksLikeIPv4(m) {
			return m // a dotted word without a port, e.g. "etcdserver.member" or a version
		}
		return "<address>"
	})
}

func looksLikeIPv4(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}
