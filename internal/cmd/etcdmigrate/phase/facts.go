package phase

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
)

// ReadFacts reads what the translation and verify need from etcd: MemberList, AuthStatus,
// AlarmList, each reachable member's Status, and HashKV of every member at one revision they all have.
func ReadFacts(ctx context.Context, s *Session) (*translate.EtcdFacts, error) {
	members, err := s.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("MemberList: %w", err)
	}
	f := &translate.EtcdFacts{}
	for _, m := range members {
		f.Members = append(f.Members, translate.EtcdMember{ID: m.IDHex(), Name: m.Name, PeerURLs: m.PeerURLs, IsLearner: m.IsLearner})
	}
	if f.AuthEnabled, err = s.AuthEnabled(ctx); err != nil {
		return nil, fmt.Errorf("AuthStatus: %w", err)
	}
	alarms, err := s.AlarmList(ctx)
	if err != nil {
		return nil, fmt.Errorf("AlarmList: %w", err)
	}
	for _, a := range alarms {
		f.Alarms = append(f.Alarms, fmt.Sprintf("%s on %s", a.Type, etcdclient.FormatID(a.MemberID)))
	}
	statuses := readStatuses(ctx, s, f)
	compareHashes(ctx, s, statuses, f)
	return f, nil
}

// readStatuses asks every reached member for its Status; members that fail or report errors
// are unhealthy. It returns the answers by Pod name.
func readStatuses(ctx context.Context, s *Session, f *translate.EtcdFacts) map[string]etcdclient.Status {
	out := map[string]etcdclient.Status{}
	ids := map[string]bool{}
	for _, pod := range slices.Sorted(maps.Keys(s.Endpoints)) {
		st, err := s.Status(ctx, s.Endpoints[pod])
		if err != nil {
			f.Unhealthy = append(f.Unhealthy, pod+" ("+err.Error()+")")
			continue
		}
		if errs := healthErrors(st.Errors, len(f.Alarms) > 0); len(errs) > 0 {
			f.Unhealthy = append(f.Unhealthy, pod+" ("+strings.Join(errs, "; ")+")")
		}
		out[pod] = st
		ids[etcdclient.FormatID(st.ClusterID)] = true
		if f.Version == "" || versionLess(st.Version, f.Version) {
			f.Version = st.Version
		}
	}
	f.ClusterIDs = slices.Sorted(maps.Keys(ids))
	return out
}

// healthErrors are the errors of a member's Status but its reports of active alarms
// ("memberID:<id> alarm:NOSPACE") when AlarmList listed alarms: the AlarmsActive refusal names
// those, with the way out (disarm), and a member that is unhealthy only through them is not
// MemberUnhealthy too, whose advice (wait) never helps against an alarm (docs/migration.md,
// "Refusals").
func healthErrors(errs []string, alarmsListed bool) []string {
	if !alarmsListed {
		return errs
	}
	return slices.DeleteFunc(slices.Clone(errs), func(e string) bool { return strings.Contains(e, "alarm:") })
}

// compareHashes computes HashKV on every member at the lowest revision any of them reported, a
// revision they all have applied, and records a mismatch.
func compareHashes(ctx context.Context, s *Session, statuses map[string]etcdclient.Status, f *translate.EtcdFacts) {
	var rev int64
	for _, st := range statuses {
		if rev == 0 || st.Revision < rev {
			rev = st.Revision
		}
	}
	hashes := map[uint32][]string{}
	for _, pod := range slices.Sorted(maps.Keys(statuses)) {
		h, err := s.HashKV(ctx, s.Endpoints[pod], rev)
		if err != nil {
			f.Unhealthy = append(f.Unhealthy, pod+" (HashKV: "+err.Error()+")")
			continue
		}
		hashes[h.Hash] = append(hashes[h.Hash], pod)
	}
	if len(hashes) > 1 {
		f.HashKVMismatch = true
		var parts []string
		for _, h := range slices.Sorted(maps.Keys(hashes)) {
			parts = append(parts, fmt.Sprintf("%d on %s", h, strings.Join(hashes[h], ", ")))
		}
		f.HashKVDetail = fmt.Sprintf("at revision %d: %s", rev, strings.Join(parts, "; "))
	}
}

// versionLess compares X.Y.Z versions numerically; unparsable parts compare as 0.
func versionLess(a, b string) bool {
	pa, pb := strings.SplitN(a, ".", 3), strings.SplitN(b, ".", 3)
	for i := range 3 {
		x, y := part(pa, i), part(pb, i)
		if x != y {
			return x < y
		}
	}
	return false
}

func part(p []string, i int) int {
	if i >= len(p) {
		return 0
	}
	n, _ := strconv.Atoi(p[i])
	return n
}
