package status

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdread"
)

// none marks a cell whose value is unknown: only etcd knows it and etcd did not say.
const none = "-"

// Text renders the one-screen layout of docs/kubectl-etcd.md, "status".
func (r Report) Text(w io.Writer) error {
	bw := bufio.NewWriter(w)
	r.header(bw)
	_, _ = fmt.Fprintln(bw)
	r.table(bw)
	r.etcdNote(bw)
	_, _ = fmt.Fprintln(bw)
	r.snapshotLine(bw)
	return bw.Flush()
}

func (r Report) header(w io.Writer) {
	c := r.Cluster
	running := c.RunningVersion
	if running == "" {
		running = none
	}
	_, _ = fmt.Fprintf(w, "Cluster  %s/%s   version %s (running %s)   replicas %d   ready %d   updated %d\n",
		c.Namespace, c.Name, c.Version, running, c.Replicas, c.ReadyMembers, c.UpdatedMembers)
	clusterID := c.ClusterID
	if clusterID == "" {
		clusterID = "none yet"
	}
	right := map[string]string{
		etcdv1alpha2.ConditionAvailable:   fmt.Sprintf("ClusterID %s   auth %s   TLS client %s, peer %s", clusterID, c.Auth, c.TLS.Client, c.TLS.Peer),
		etcdv1alpha2.ConditionProgressing: r.generation(),
		etcdv1alpha2.ConditionDegraded:    r.pdb() + "   alarms " + r.alarms(),
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var notes []string
	for _, t := range []string{etcdv1alpha2.ConditionAvailable, etcdv1alpha2.ConditionProgressing, etcdv1alpha2.ConditionDegraded} {
		status, reason := none, none
		if cond, ok := r.condition(t); ok {
			status, reason = string(cond.Status), cond.Reason
			if !settled(cond) && cond.Message != "" {
				notes = append(notes, fmt.Sprintf("  %s: %s", t, cond.Message))
			}
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t, status, reason, right[t])
	}
	_ = tw.Flush()
	for _, n := range notes {
		_, _ = fmt.Fprintln(w, n)
	}
}

func (r Report) condition(t string) (Condition, bool) {
	for _, c := range r.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return Condition{}, false
}

// settled is true for a condition in its quiet state, whose message need not be shown: the
// screen then stays one screen on a healthy cluster and spells out what is not.
func settled(c Condition) bool {
	switch c.Type {
	case etcdv1alpha2.ConditionAvailable:
		return c.Status == metav1.ConditionTrue
	default:
		return c.Status == metav1.ConditionFalse
	}
}

func (r Report) generation() string {
	s := fmt.Sprintf("generation %d (observed %d)", r.Generation, r.ObservedGeneration)
	if r.Generation > r.ObservedGeneration {
		s = fmt.Sprintf("generation %d (observed %d, pending)", r.Generation, r.ObservedGeneration)
	}
	if d := r.ProgressDeadline; d != nil {
		when := "in " + age(d.Sub(r.now))
		if !d.After(r.now) {
			when = "passed " + age(r.now.Sub(d.Time)) + " ago"
		}
		s += fmt.Sprintf("   deadline %s (%s)", d.UTC().Format(time.RFC3339), when)
	}
	return s
}

func (r Report) pdb() string {
	p := r.PDB
	switch {
	case p == nil:
		return "PDB none"
	case p.MinAvailable != "":
		return fmt.Sprintf("PDB minAvailable %s (allowed disruptions %d)", p.MinAvailable, p.AllowedDisruptions)
	case p.MaxUnavailable != "":
		return fmt.Sprintf("PDB maxUnavailable %s (allowed disruptions %d)", p.MaxUnavailable, p.AllowedDisruptions)
	}
	return fmt.Sprintf("PDB %s (allowed disruptions %d)", p.Name, p.AllowedDisruptions)
}

func (r Report) alarms() string {
	switch {
	case r.Alarms == nil:
		return none
	case len(r.Alarms) == 0:
		return "none"
	}
	parts := make([]string, 0, len(r.Alarms))
	for _, a := range r.Alarms {
		who := a.Member
		if who == "" {
			who = a.MemberID
		}
		parts = append(parts, a.Type+" "+who)
	}
	return strings.Join(parts, ", ")
}

func (r Report) table(w io.Writer) {
	withNotes := false
	for _, m := range r.Members {
		withNotes = withNotes || len(notes(m)) > 0
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	head := "MEMBER\tID\tROLE\tVERSION\tDB/IN-USE\tLAG\tREADY\tUPDATED\tHEALTHY\tNODE"
	if withNotes {
		head += "\tNOTE"
	}
	_, _ = fmt.Fprintln(tw, head)
	for _, m := range r.Members {
		cells := []string{
			or(m.Name, m.EtcdName), or(m.ID), or(m.Role), or(m.Version), dbCell(m), lagCell(m),
			condCell(m.Ready, false), condCell(m.Updated, false), condCell(m.Healthy, true), or(m.Node),
		}
		if withNotes {
			cells = append(cells, strings.Join(notes(m), "; "))
		}
		_, _ = fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
	// tabwriter pads an empty last cell (a row without a note) with trailing blanks.
	for line := range strings.Lines(buf.String()) {
		_, _ = fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
}

// notes say what is wrong with a row beyond its cells.
func notes(m Member) []string {
	var out []string
	if m.StatusError != "" {
		out = append(out, "no Status answer: "+m.StatusError)
	}
	switch m.Orphan {
	case etcdread.OrphanNoEtcdMember:
		out = append(out, "etcd member without EtcdMember")
	case etcdread.OrphanNotInEtcd:
		out = append(out, "not in etcd's member list")
	}
	if m.Name != "" && m.Pod == "" {
		out = append(out, "no Pod")
	}
	return out
}

// or is the first non-empty value, else none.
func or(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return none
}

func dbCell(m Member) string {
	if m.DBSizeBytes == nil || m.DBSizeInUseBytes == nil {
		return none
	}
	return Bytes(*m.DBSizeBytes) + "/" + Bytes(*m.DBSizeInUseBytes)
}

func lagCell(m Member) string {
	if m.AppliedIndexLag == nil {
		return none
	}
	return strconv.FormatUint(*m.AppliedIndexLag, 10)
}

func condCell(c *MemberCondition, reason bool) string {
	switch {
	case c == nil:
		return none
	case reason:
		return c.Reason
	}
	return string(c.Status)
}

func (r Report) etcdNote(w io.Writer) {
	if n := r.Etcd.Note(); n != "" {
		_, _ = fmt.Fprintln(w, n)
	}
}

func (r Report) snapshotLine(w io.Writer) {
	if len(r.Snapshots) == 0 {
		_, _ = fmt.Fprintln(w, "Snapshots  none")
		return
	}
	parts := make([]string, 0, len(r.Snapshots))
	for _, s := range r.Snapshots {
		at := s.CreatedAt
		if s.CompletedAt != nil {
			at = *s.CompletedAt
		}
		p := fmt.Sprintf("%s %s %s ago", s.Name, s.Phase, age(r.now.Sub(at.Time)))
		if s.SizeBytes > 0 {
			p += " " + Bytes(s.SizeBytes)
		}
		if s.Checksum != "" {
			p += " " + shortDigest(s.Checksum)
		}
		parts = append(parts, p)
	}
	_, _ = fmt.Fprintf(w, "Snapshots  %s\n", strings.Join(parts, "   "))
}

// age is d in one unit, the way the status screen reads best at a glance: seconds below 2
// minutes, minutes below 2 hours, hours below 2 days, then days.
func age(d time.Duration) string {
	switch {
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// shortDigest keeps the algorithm and 8 hex digits, enough to tell snapshots apart by eye.
func shortDigest(d string) string {
	algo, hex, ok := strings.Cut(d, ":")
	if !ok || len(hex) <= 8 {
		return d
	}
	return algo + ":" + hex[:8] + "…"
}

// Bytes renders n in binary units as Kubernetes quantities do (Ki, Mi, Gi, Ti): whole units from
// 10 up, one decimal below.
func Bytes(n int64) string {
	units := []string{"Ki", "Mi", "Gi", "Ti", "Pi"}
	if n < 1024 {
		return strconv.FormatInt(n, 10)
	}
	v := float64(n)
	unit := ""
	for _, u := range units {
		if v < 1024 {
			break
		}
		v /= 1024
		unit = u
	}
	if v < 10 {
		return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0") + unit
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + unit
}
