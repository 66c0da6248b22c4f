package etcdclient

import (
	"fmt"
	"strconv"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
)

// FormatID renders a member ID the way etcd and etcdctl print it: lower-case hex without a
// prefix (e.g. "8e9e05c52164694d").
func FormatID(id uint64) string {
	return strconv.FormatUint(id, 16)
}

// ParseID parses a member ID printed by FormatID, etcdctl or etcd's logs.
func ParseID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing etcd member ID %q: %w", s, err)
	}
	return id, nil
}

// Member is one etcd member as MemberList reports it.
type Member struct {
	// ID is etcd's member ID.
	ID uint64
	// Name is the member's --name; empty until the member's process has started and published
	// its attributes to the cluster.
	Name string
	// PeerURLs are the member's peer URLs, as persisted in the cluster.
	PeerURLs []string
	// ClientURLs are the member's advertised client URLs; empty until it has started.
	ClientURLs []string
	// IsLearner is true for a non-voting learner.
	IsLearner bool
}

// IDHex returns the member ID in etcd's hex form.
func (m Member) IDHex() string { return FormatID(m.ID) }

// Started reports whether the member's process has started and joined: etcd lists a member
// that was added but never started with an empty name.
func (m Member) Started() bool { return m.Name != "" }

// Status is one member's answer to the Status call.
type Status struct {
	// Endpoint is the client URL the status was read from.
	Endpoint string
	// ID is the answering member's ID.
	ID uint64
	// Leader is the ID of the leader the member knows; 0 when it knows none.
	Leader uint64
	// Version is the member's etcd server version, e.g. "3.6.16".
	Version string
	// DBSize is the size of the backend database file in bytes.
	DBSize int64
	// DBSizeInUse is the part of DBSize holding live data; the rest is freed by defragmentation.
	DBSizeInUse int64
	// RaftIndex is the member's committed raft index.
	RaftIndex uint64
	// RaftAppliedIndex is the member's applied raft index.
	RaftAppliedIndex uint64
	// RaftTerm is the member's raft term.
	RaftTerm uint64
	// IsLearner is true when the member answered as a learner.
	IsLearner bool
	// Revision is the member's current key-value store revision (the response header's): the
	// keyspace comparison picks a revision every member has from it
	// (docs/design/healing.md, "Keyspace hash comparison").
	Revision int64
	// ClusterID is the cluster ID the member answers with (the response header's); members of
	// one cluster that report different ones are a split brain.
	ClusterID uint64
	// Errors are the alarm and health errors the member reports about itself.
	Errors []string
}

// IsLeader reports whether the answering member believes it is the leader.
func (s Status) IsLeader() bool { return s.ID != 0 && s.ID == s.Leader }

// AlarmType is an etcd alarm kind.
type AlarmType string

const (
	// AlarmNoSpace is raised when the backend exceeds its quota; etcd then refuses writes.
	AlarmNoSpace AlarmType = "NOSPACE"
	// AlarmCorrupt is raised by the corruption checks for a member whose data diverged.
	AlarmCorrupt AlarmType = "CORRUPT"
)

// Alarm is one active alarm.
type Alarm struct {
	// MemberID is the member that raised the alarm.
	MemberID uint64
	// Type is the alarm kind.
	Type AlarmType
}

// HashKV is one member's hash of its key-value store up to a revision. Members that applied
// the same history have equal hashes at the same revision; a difference means divergence.
type HashKV struct {
	// Endpoint is the client URL the hash was read from.
	Endpoint string
	// MemberID is the answering member's ID.
	MemberID uint64
	// Hash is the hash of the keys and values up to HashRevision.
	Hash uint32
	// HashRevision is the revision the hash covers.
	HashRevision int64
	// CompactRevision is the member's compacted revision.
	CompactRevision int64
	// Revision is the member's current revision.
	Revision int64
}

func memberFromPB(m *etcdserverpb.Member) Member {
	if m == nil {
		return Member{}
	}
	return Member{
		ID:         m.ID,
		Name:       m.Name,
		PeerURLs:   append([]string(nil), m.PeerURLs...),
		ClientURLs: append([]string(nil), m.ClientURLs...),
		IsLearner:  m.IsLearner,
	}
}

func membersFromPB(ms []*etcdserverpb.Member) []Member {
	out := make([]Member, 0, len(ms))
	for _, m := range ms {
		out = append(out, memberFromPB(m))
	}
	return out
}

func alarmsFromPB(as []*etcdserverpb.AlarmMember) []Alarm {
	out := make([]Alarm, 0, len(as))
	for _, a := range as {
		if a == nil {
			continue
		}
		out = append(out, Alarm{MemberID: a.MemberID, Type: AlarmType(a.Alarm.String())})
	}
	return out
}

func alarmTypeToPB(t AlarmType) etcdserverpb.AlarmType {
	switch t {
	case AlarmNoSpace:
		return etcdserverpb.AlarmType_NOSPACE
	case AlarmCorrupt:
		return etcdserverpb.AlarmType_CORRUPT
	default:
		return etcdserverpb.AlarmType_NONE
	}
}
