package hashkv

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

const (
	// DefaultTimeout bounds a whole comparison, including waiting for lagging members.
	DefaultTimeout = 30 * time.Second
	// DefaultCallTimeout bounds each Status and HashKV call.
	DefaultCallTimeout = 5 * time.Second
	// retryInterval spaces attempts while members catch up.
	retryInterval = 200 * time.Millisecond
)

// ErrIncomplete means some member did not answer HashKV at the chosen revision within the
// bound; the report holds the last error per member.
var ErrIncomplete = errors.New("not every member answered HashKV at the chosen revision")

// Options bound a comparison.
type Options struct {
	// Timeout bounds the whole comparison; DefaultTimeout when zero.
	Timeout time.Duration
	// CallTimeout bounds each RPC; DefaultCallTimeout when zero.
	CallTimeout time.Duration
}

// MemberHash is one member's answer.
type MemberHash struct {
	// Endpoint is the member's client URL.
	Endpoint string `json:"endpoint"`
	// MemberID is the member that answered, from the response header.
	MemberID uint64 `json:"memberID,omitempty"`
	// Hash is the hash of the key-value store up to Report.Revision.
	Hash uint32 `json:"hash"`
	// CompactRevision is the member's compaction revision; hashes cover (compact, revision],
	// so they are comparable only between members with the same compaction revision.
	CompactRevision int64 `json:"compactRevision"`
	// Err is the last error from this member, when it did not answer.
	Err string `json:"error,omitempty"`
}

// Report is the result of a comparison.
type Report struct {
	// Revision is the revision every member hashed at.
	Revision int64 `json:"revision"`
	// Members holds one entry per endpoint, in the order given.
	Members []MemberHash `json:"members"`
	// Attempts is how many rounds the comparison took.
	Attempts int `json:"attempts"`
}

// Equal reports whether every member answered with the same hash and compaction revision.
func (r Report) Equal() bool { return len(r.Members) > 0 && len(r.Mismatches()) == 0 }

// Mismatches describes every member that did not answer or whose hash or compaction revision
// differs from the first answering member's, sorted.
func (r Report) Mismatches() []string {
	var ref *MemberHash
	var out []string
	for i := range r.Members {
		m := &r.Members[i]
		if m.Err != "" {
			out = append(out, fmt.Sprintf("%s: no hash: %s", m.Endpoint, m.Err))
			continue
		}
		if ref == nil {
			ref = m
			continue
		}
		if m.Hash != ref.Hash || m.CompactRevision != ref.CompactRevision {
			out = append(out, fmt.Sprintf("%s: hash %d (compact revision %d) differs from %s: hash %d (compact revision %d) at revision %d",
				m.Endpoint, m.Hash, m.CompactRevision, ref.Endpoint, ref.Hash, ref.CompactRevision, r.Revision))
		}
	}
	sort.Strings(out)
	return out
}

// String summarises the report in one line.
func (r Report) String() string {
	if r.Equal() {
		return fmt.Sprintf("%d members agree at revision %d (hash %d)", len(r.Members), r.Revision, r.Members[0].Hash)
	}
	return fmt.Sprintf("revision %d: %s", r.Revision, strings.Join(r.Mismatches(), "; "))
}

// Compare asks every endpoint for its hash at one revision, the highest any member reports, so
// a member that lost writes cannot hide behind a lower common revision. cli may be any client
// built with the endpoints' dial options (TLS, credentials): Maintenance calls that take an
// endpoint dial that member directly.
//
// Compare returns the report and a nil error once every member answered, whether or not the
// hashes agree; callers check Equal. It retries members that are behind ("future revision") or
// unreachable, and a round in which compaction revisions differ (a compaction landed between
// calls), until the bound; then it returns ErrIncomplete with the last report.
func Compare(ctx context.Context, cli *clientv3.Client, endpoints []string, opts Options) (Report, error) {
	if len(endpoints) == 0 {
		return Report{}, errors.New("comparing HashKV: no endpoints")
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	callTimeout := opts.CallTimeout
	if callTimeout <= 0 {
		callTimeout = DefaultCallTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var rep Report
	ticker := time.NewTicker(retryInterval)
	defer ticker.Stop()
	for {
		rep.Attempts++
		done, err := round(ctx, cli, endpoints, callTimeout, &rep)
		if err != nil {
			return rep, err
		}
		if done {
			return rep, nil
		}
		select {
		case <-ctx.Done():
			return rep, fmt.Errorf("comparing HashKV after %d attempts: %w: %s", rep.Attempts, ErrIncomplete, strings.Join(rep.Mismatches(), "; "))
		case <-ticker.C:
		}
	}
}

// round runs one attempt and reports whether the result is final.
func round(ctx context.Context, cli *clientv3.Client, endpoints []string, callTimeout time.Duration, rep *Report) (bool, error) {
	// Choose the revision: the highest any member reports. Writes may still arrive; a member
	// ahead of the target can still hash at it.
	target := rep.Revision
	for _, ep := range endpoints {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		st, err := cli.Status(cctx, ep)
		cancel()
		if err == nil {
			target = max(target, st.Header.Revision)
		}
	}
	if target == 0 {
		rep.Members = memberErrors(endpoints, "no member answered Status")
		return false, nil
	}
	rep.Revision = target
	rep.Members = make([]MemberHash, len(endpoints))
	complete := true
	for i, ep := range endpoints {
		rep.Members[i].Endpoint = ep
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		resp, err := cli.HashKV(cctx, ep, target)
		cancel()
		if err != nil {
			rep.Members[i].Err = err.Error()
			complete = false
			continue
		}
		rep.Members[i].MemberID = resp.Header.MemberId
		rep.Members[i].Hash = resp.Hash
		rep.Members[i].CompactRevision = resp.CompactRevision
	}
	if !complete {
		return false, nil
	}
	if compactionRace(rep.Members) {
		return false, nil
	}
	return true, nil
}

// compactionRace reports whether members answered with different compaction revisions: a
// compaction was applied between two HashKV calls, so the hashes cover different ranges.
func compactionRace(ms []MemberHash) bool {
	for _, m := range ms[1:] {
		if m.CompactRevision != ms[0].CompactRevision {
			return true
		}
	}
	return false
}

func memberErrors(endpoints []string, msg string) []MemberHash {
	out := make([]MemberHash, len(endpoints))
	for i, ep := range endpoints {
		out[i] = MemberHash{Endpoint: ep, Err: msg}
	}
	return out
}
