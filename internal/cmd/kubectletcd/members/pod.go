package members

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/printer"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// PodReport is `members --pod`: etcd's member list through one Pod, with the Pods named like
// the members (docs/kubectl-etcd.md, "Compatibility mode (--pod)"). Its members carry the
// fields of Report's that etcd knows, plus the Pod.
type PodReport struct {
	Schema string `json:"schema"`
	Kind   string `json:"kind"`
	Mode   string `json:"mode"`
	// Pod is namespace/name; Note the heading of the text form.
	Pod     string      `json:"pod"`
	Note    string      `json:"note"`
	Members []PodMember `json:"members"`
}

// PodMember is one member etcd lists.
type PodMember struct {
	ID         string   `json:"id"`
	Name       string   `json:"name,omitempty"`
	PeerURLs   []string `json:"peerURLs,omitempty"`
	ClientURLs []string `json:"clientURLs,omitempty"`
	Learner    bool     `json:"learner"`
	// Pod is the Pod named like the member; empty when the namespace has none.
	Pod string `json:"pod,omitempty"`
}

// RunPod prints members --pod.
func RunPod(ctx context.Context, d *invocation.Deps) error {
	obs, sess, err := etcdobserve.Read(ctx, d, "")
	if err != nil {
		return err
	}
	defer func() { _ = sess.Close() }()
	rep := BuildPod(obs)
	return printer.Print(d.Out, d.Globals.Output, rep, rep.Text)
}

// BuildPod joins etcd's list with the Pods obs matched to the members.
func BuildPod(obs *etcdobserve.Observation) PodReport {
	pm := obs.Pod
	r := PodReport{Schema: printer.Schema, Kind: Kind, Mode: etcdobserve.Mode, Pod: pm.Pod.Namespace + "/" + pm.Pod.Name, Note: pm.Heading(), Members: []PodMember{}}
	for _, m := range obs.Members {
		row := PodMember{ID: etcdclient.FormatID(m.ID), Learner: m.Learner}
		for _, e := range pm.List {
			if e.ID == m.ID {
				row.Name, row.PeerURLs, row.ClientURLs = e.Name, e.PeerURLs, e.ClientURLs
			}
		}
		if m.Pod != nil {
			row.Pod = m.Pod.Name
		}
		r.Members = append(r.Members, row)
	}
	return r
}

// Text renders the list.
func (r PodReport) Text(w io.Writer) error {
	_, _ = fmt.Fprintln(w, r.Note)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "ID\tNAME\tPEER URLS\tCLIENT URLS\tLEARNER\tPOD")
	for _, m := range r.Members {
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.ID, or(m.Name), urls(m.PeerURLs), urls(m.ClientURLs), strconv.FormatBool(m.Learner), or(m.Pod))
	}
	return tw.Flush()
}
