package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
)

// Report is every cluster's plan of one run: the JSON document of -o json.
type Report struct {
	Schema   string  `json:"schema"`
	Clusters []*Plan `json:"clusters"`
}

// NewReport collects plans under the current Schema.
func NewReport(plans ...*Plan) *Report {
	if plans == nil {
		plans = []*Plan{}
	}
	return &Report{Schema: Schema, Clusters: plans}
}

// Refused counts the refused clusters; a dry run exits non-zero when it is not 0.
func (r *Report) Refused() int {
	n := 0
	for _, p := range r.Clusters {
		if p.Verdict == VerdictRefused {
			n++
		}
	}
	return n
}

// JSON writes the report as indented JSON.
func (r *Report) JSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// Text writes the report for a person: per cluster the verdict, security summary, members,
// refusals and warnings with their fixes, the steps, and the EtcdCluster manifest.
func (r *Report) Text(w io.Writer) error {
	for _, p := range r.Clusters {
		if err := p.text(w); err != nil {
			return err
		}
		_, _ = fmt.Fprintln(w)
	}
	_, _ = fmt.Fprintf(w, "%d cluster(s): %d to adopt, %d refused (left untouched)\n", len(r.Clusters), len(r.Clusters)-r.Refused(), r.Refused())
	return nil
}

func (p *Plan) text(w io.Writer) error {
	if p.Verdict == VerdictRefused {
		_, _ = fmt.Fprintf(w, "Cluster %s: REFUSED, left untouched\n", p.Cluster)
		findingsText(w, "Refusals", p.Refusals)
		findingsText(w, "Warnings", p.Warnings)
		return nil
	}
	_, _ = fmt.Fprintf(w, "Cluster %s: adopt %d members, etcd %s\n", p.Cluster, len(p.Members), p.Version)
	securityText(w, p.Security)
	_, _ = fmt.Fprintln(w, "  Members:")
	for _, m := range p.Members {
		_, _ = fmt.Fprintf(w, "    %-24s %-16s %-28s template-hash %s\n", m.Name, m.MemberID, m.PVCName, m.TemplateHash)
	}
	findingsText(w, "Warnings", p.Warnings)
	_, _ = fmt.Fprintln(w, "  Steps:")
	for _, s := range p.Steps {
		if s.Number > 0 {
			_, _ = fmt.Fprintf(w, "    %d. %s\n", s.Number, s.Title)
		} else {
			_, _ = fmt.Fprintf(w, "    before the adoption (%s): %s\n", s.Phase, s.Title)
		}
		for _, a := range s.Actions {
			_, _ = fmt.Fprintf(w, "       %-13s %s %s: %s\n", a.Verb, a.Kind, a.Name, a.Change)
		}
	}
	if len(p.Then) > 0 {
		_, _ = fmt.Fprintln(w, "  Then:")
		for _, t := range p.Then {
			_, _ = fmt.Fprintf(w, "    - %s\n", t)
		}
	}
	return manifestText(w, p.Objects)
}

func securityText(w io.Writer, s translate.Security) {
	client := map[string]string{"none": "plaintext", "tls": "TLS", "mtls": "mutual TLS"}[s.ClientTLS]
	peer := map[string]string{"none": "plaintext", "auto": "auto-TLS (⚠ encrypted, unauthenticated)", "mtls": "mutual TLS"}[s.PeerTLS]
	window := "none"
	if s.AuthWindow {
		window = "⚠ auth off from before the backup until the operator turns it on after step 8"
	}
	_, _ = fmt.Fprintf(w, "  Security: client API %s; peers %s\n", client, peer)
	_, _ = fmt.Fprintf(w, "            auth window: %s\n", window)
	for _, m := range s.CAMerges {
		_, _ = fmt.Fprintf(w, "            ⚠ CA merge: %s\n", m)
	}
}

func findingsText(w io.Writer, title string, fs []translate.Finding) {
	if len(fs) == 0 {
		return
	}
	_, _ = fmt.Fprintf(w, "  %s:\n", title)
	for _, f := range fs {
		mark := ""
		if f.Security {
			mark = "⚠ SECURITY "
		}
		_, _ = fmt.Fprintf(w, "    %s%s (%s): %s\n", mark, f.Code, f.Field, f.Message)
		if f.Fix != "" {
			_, _ = fmt.Fprintf(w, "        fix: %s\n", f.Fix)
		}
	}
}

func manifestText(w io.Writer, o *Objects) error {
	if o == nil || o.EtcdCluster == nil {
		return nil
	}
	b, err := yaml.Marshal(o.EtcdCluster)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintln(w, "  EtcdCluster manifest (status written in step 1):")
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		_, _ = fmt.Fprintf(w, "    %s\n", line)
	}
	return nil
}
