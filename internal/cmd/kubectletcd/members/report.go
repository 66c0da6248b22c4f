package members

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/clusterread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdread"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/printer"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// Kind is the report's kind in JSON and YAML.
const Kind = "Members"

// none marks a cell only etcd knows, when etcd did not say.
const none = "-"

// Report is etcd's member list joined with the cluster's EtcdMembers (docs/kubectl-etcd.md,
// "members").
type Report struct {
	Schema string `json:"schema"`
	Kind   string `json:"kind"`
	// Cluster is namespace/name.
	Cluster   string `json:"cluster"`
	ClusterID string `json:"clusterID,omitempty"`
	// Members are the EtcdMembers by name, then etcd members no EtcdMember is, by ID.
	Members []Member `json:"members"`
	// Etcd says whether etcd was reached and which cluster-wide calls failed.
	Etcd etcdread.Source `json:"etcd"`
}

// Member is one member as etcd lists it and as its EtcdMember records it. Without etcd's list
// (--no-etcd, or etcd unreachable) only the EtcdMember's side is filled.
type Member struct {
	// ID is etcd's member ID in hex: etcd's, else the EtcdMember's status.memberID.
	ID string `json:"id,omitempty"`
	// Name is etcd's name for the member, empty until its process has started.
	Name       string   `json:"name,omitempty"`
	PeerURLs   []string `json:"peerURLs,omitempty"`
	ClientURLs []string `json:"clientURLs,omitempty"`
	// Listed is whether etcd lists the member; absent when etcd's list is unknown.
	Listed *bool `json:"listed,omitempty"`
	// Learner is etcd's answer, else the EtcdMember's status.isVoter negated; absent when
	// neither knows (a member not added yet).
	Learner *bool `json:"learner,omitempty"`
	// EtcdMember is the EtcdMember's name; empty for an etcd member no EtcdMember is.
	EtcdMember string `json:"etcdMember,omitempty"`
	// PVC is the member's PersistentVolumeClaim; empty for Memory members.
	PVC string `json:"pvc,omitempty"`
	// Orphan is NoEtcdMember (etcd lists a member no EtcdMember is) or NotInEtcd (an
	// EtcdMember's memberID that etcd does not list).
	Orphan string `json:"orphan,omitempty"`
}

// Build joins s's EtcdMembers with etcd's answer in v.
func Build(s *clusterread.State, v *etcdread.View) Report {
	r := Report{
		Schema:    printer.Schema,
		Kind:      Kind,
		Cluster:   s.Cluster.Namespace + "/" + s.Cluster.Name,
		ClusterID: s.Cluster.Status.ClusterID,
		Members:   []Member{},
		Etcd:      v.Source(),
	}
	for _, p := range etcdread.Pairs(s.Members, v) {
		r.Members = append(r.Members, member(p))
	}
	return r
}

func member(p etcdread.Pair) Member {
	var m Member
	if cr := p.CR; cr != nil {
		m.ID, m.EtcdMember, m.PVC = cr.Status.MemberID, cr.Name, cr.Status.PVCName
		if cr.Status.MemberID != "" {
			learner := !cr.Status.IsVoter
			m.Learner = &learner
		}
	}
	if !p.EtcdUnknown {
		listed := p.Etcd != nil
		m.Listed = &listed
	}
	if e := p.Etcd; e != nil {
		learner := e.IsLearner
		m.ID, m.Name, m.PeerURLs, m.ClientURLs, m.Learner = etcdclient.FormatID(e.ID), e.Name, e.PeerURLs, e.ClientURLs, &learner
	}
	m.Orphan = p.Orphan()
	return m
}

// Text renders the members table.
func (r Report) Text(w io.Writer) error {
	bw := bufio.NewWriter(w)
	withNotes := false
	for _, m := range r.Members {
		withNotes = withNotes || note(m) != ""
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	head := "ID\tNAME\tPEER URLS\tCLIENT URLS\tLEARNER\tETCDMEMBER\tPVC"
	if withNotes {
		head += "\tNOTE"
	}
	_, _ = fmt.Fprintln(tw, head)
	for _, m := range r.Members {
		cells := []string{or(m.ID), or(m.Name), urls(m.PeerURLs), urls(m.ClientURLs), learner(m.Learner), or(m.EtcdMember), or(m.PVC)}
		if withNotes {
			cells = append(cells, note(m))
		}
		_, _ = fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
	// tabwriter pads an empty last cell (a row without a note) with trailing blanks.
	for line := range strings.Lines(buf.String()) {
		_, _ = fmt.Fprintln(bw, strings.TrimRight(line, " \n"))
	}
	if n := r.Etcd.Note(); n != "" {
		_, _ = fmt.Fprintln(bw, n)
	}
	return bw.Flush()
}

// note says what a row's cells do not: an orphan, or a member between steps of the operator's
// add (docs/design/membership-flows.md, "Scale up").
func note(m Member) string {
	switch {
	case m.Orphan == etcdread.OrphanNoEtcdMember:
		return "orphan: etcd lists it, no EtcdMember is it"
	case m.Orphan == etcdread.OrphanNotInEtcd:
		return "orphan: its memberID is not in etcd's list"
	case m.Listed == nil:
		return ""
	case !*m.Listed:
		return "not added to etcd yet"
	case m.Name == "":
		return "added, not started yet"
	}
	return ""
}

func or(v string) string {
	if v == "" {
		return none
	}
	return v
}

func urls(us []string) string {
	if len(us) == 0 {
		return none
	}
	return strings.Join(us, ",")
}

func learner(b *bool) string {
	if b == nil {
		return none
	}
	return strconv.FormatBool(*b)
}
