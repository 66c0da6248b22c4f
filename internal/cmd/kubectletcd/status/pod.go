package status

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/alarm"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/printer"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/podstate"
)

// PodKind is the kind of status's pod-mode document, whose shape differs from Status's.
const PodKind = "PodStatus"

// PodReport is `status --pod`: etcd's view only, through one Pod (docs/kubectl-etcd.md,
// "Compatibility mode (--pod)"). No Secret, password or Secret name is in it.
type PodReport struct {
	Schema string `json:"schema"`
	Kind   string `json:"kind"`
	Mode   string `json:"mode"`
	// Pod is namespace/name; Note the heading of the text form.
	Pod  string `json:"pod"`
	Note string `json:"note"`
	// TLS is "off", "on" or "mutual" (client certificates required), as the Pod's flags say.
	TLS string `json:"tls"`
	// Member is the Pod's own Status answer; nil when it did not answer, with StatusError why.
	Member      *PodMember `json:"member,omitempty"`
	StatusError string     `json:"statusError,omitempty"`
	// Members are etcd's member list, by name.
	Members []PodListed   `json:"members"`
	Alarms  []alarm.Alarm `json:"alarms"`
}

// PodMember is the Pod's etcd's Status answer.
type PodMember struct {
	Name      string `json:"name"`
	ID        string `json:"id"`
	ClusterID string `json:"clusterID"`
	Version   string `json:"version"`
	Role      string `json:"role"`
	// Leader is the leader's name, or its hex ID when etcd lists it under none; empty without one.
	Leader           string `json:"leader,omitempty"`
	DBSize           int64  `json:"dbSize"`
	DBSizeInUse      int64  `json:"dbSizeInUse"`
	Quota            int64  `json:"quota"`
	Revision         int64  `json:"revision"`
	RaftTerm         uint64 `json:"raftTerm"`
	RaftIndex        uint64 `json:"raftIndex"`
	RaftAppliedIndex uint64 `json:"raftAppliedIndex"`
}

// PodListed is one member etcd lists, with the Pod named like it.
type PodListed struct {
	Name string `json:"name"`
	ID   string `json:"id"`
	// Role is leader, follower or learner as the Pod's member sees it; "" when it knows no leader.
	Role string `json:"role,omitempty"`
	// Pod is the Pod named like the member; empty when there is none in the namespace.
	Pod      string `json:"pod,omitempty"`
	PodReady *bool  `json:"podReady,omitempty"`
	// Asked marks the member whose Status this report shows.
	Asked bool `json:"asked,omitempty"`
}

// RunPod prints status --pod once.
func RunPod(ctx context.Context, o Options, d *invocation.Deps) error {
	if o.Watch {
		return invocation.Usagef("--watch redraws a cluster's screen; with --pod run status again instead")
	}
	obs, sess, err := etcdobserve.Read(ctx, d, "")
	if err != nil {
		return err
	}
	defer func() { _ = sess.Close() }()
	rep := BuildPod(obs)
	return printer.Print(d.Out, d.Globals.Output, rep, rep.Text)
}

// BuildPod renders a pod-mode observation.
func BuildPod(obs *etcdobserve.Observation) PodReport {
	pm := obs.Pod
	r := PodReport{Schema: printer.Schema, Kind: PodKind, Mode: etcdobserve.Mode, Pod: pm.Pod.Namespace + "/" + pm.Pod.Name,
		Note: pm.Heading(), TLS: tlsOf(pm), StatusError: etcdclient.Sanitize(pm.StatusErr), Members: []PodListed{}, Alarms: alarm.Collect(obs).Alarms}
	var leader uint64
	for _, m := range obs.Members {
		if obs.Target(m) && m.Status != nil {
			leader = m.Status.Leader
			r.Member = podMember(obs, m)
		}
	}
	for _, m := range obs.Members {
		l := PodListed{Name: m.Name, ID: etcdclient.FormatID(m.ID), Role: podRole(m, leader), Asked: obs.Target(m)}
		if m.Pod != nil {
			ready := podstate.ReadyCondition(m.Pod)
			l.Pod, l.PodReady = m.Pod.Name, &ready
		}
		r.Members = append(r.Members, l)
	}
	return r
}

func tlsOf(pm *etcdobserve.PodMode) string {
	switch {
	case !pm.Target.TLS():
		return "off"
	case pm.Target.ClientCertAuth:
		return "mutual"
	default:
		return "on"
	}
}

func podMember(obs *etcdobserve.Observation, m etcdobserve.Member) *PodMember {
	st := m.Status
	pm := &PodMember{Name: m.Name, ID: etcdclient.FormatID(m.ID), ClusterID: etcdclient.FormatID(st.ClusterID), Version: st.Version,
		Role: podRole(m, st.Leader), DBSize: st.DBSize, DBSizeInUse: st.DBSizeInUse, Quota: obs.Quota(), Revision: st.Revision,
		RaftTerm: st.RaftTerm, RaftIndex: st.RaftIndex, RaftAppliedIndex: st.RaftAppliedIndex}
	if st.Leader != 0 {
		if pm.Leader = obs.NameOf(st.Leader); pm.Leader == "" {
			pm.Leader = etcdclient.FormatID(st.Leader)
		}
	}
	return pm
}

func podRole(m etcdobserve.Member, leader uint64) string {
	switch {
	case m.Learner:
		return "learner"
	case leader == 0:
		return ""
	case m.ID == leader:
		return "leader"
	default:
		return "follower"
	}
}

// Text renders the pod-mode screen.
func (r PodReport) Text(w io.Writer) error {
	_, _ = fmt.Fprintln(w, r.Note)
	if m := r.Member; m != nil {
		role := m.Role
		if m.Role == "follower" && m.Leader != "" {
			role += " (leader " + m.Leader + ")"
		}
		_, _ = fmt.Fprintf(w, "Member    %s  ID %s  version %s  %s  term %d\n", m.Name, m.ID, m.Version, or(role), m.RaftTerm)
		_, _ = fmt.Fprintf(w, "Database  %s, %s in use, quota %s   revision %d   raft index %d, applied %d\n",
			Bytes(m.DBSize), Bytes(m.DBSizeInUse), Bytes(m.Quota), m.Revision, m.RaftIndex, m.RaftAppliedIndex)
		tls := r.TLS
		if tls == "mutual" {
			tls += " (client certificates required)"
		}
		_, _ = fmt.Fprintf(w, "Cluster   ID %s   client TLS %s\n", m.ClusterID, tls)
	} else {
		_, _ = fmt.Fprintf(w, "Member    no Status answer: %s\n", r.StatusError)
	}
	_, _ = fmt.Fprintf(w, "Alarms    %s\n\n", podAlarms(r.Alarms))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "MEMBER\tID\tROLE\tPOD\tREADY")
	for _, m := range r.Members {
		ready := "-"
		if m.PodReady != nil {
			ready = strconv.FormatBool(*m.PodReady)
		}
		name := m.Name
		if m.Asked {
			name += " *"
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, m.ID, or(m.Role), or(m.Pod), ready)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "* the member asked for its Status; the others are etcd's member list, with the Pods named like them.")
	return err
}

func podAlarms(as []alarm.Alarm) string {
	if len(as) == 0 {
		return "none"
	}
	out := make([]string, 0, len(as))
	for _, a := range as {
		who := a.Member
		if who == "" {
			who = a.MemberID
		}
		out = append(out, a.Type+" "+who)
	}
	return strings.Join(out, ", ")
}
