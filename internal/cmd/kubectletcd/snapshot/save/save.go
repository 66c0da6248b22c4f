// Package save is `kubectl etcd snapshot save`: it streams a snapshot of one member's database
// to a file on this machine, the way `etcdctl snapshot save` does, but by cluster name and with
// the member picked for the person. It changes nothing in the cluster, so it prints no plan.
package save

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/printer"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// RuleFileExists refuses to replace an existing file without --force.
const RuleFileExists = "file-exists"

// Timeout bounds the stream instead of --timeout: a large database takes minutes
// (docs/kubectl-etcd.md, "Global flags").
const Timeout = 10 * time.Minute

// Options are the command's arguments.
type Options struct {
	Cluster string
	// File is where the snapshot goes; File + ".sha256" gets its digest.
	File string
	// Member, when set, names the member to stream from.
	Member string
	// Force replaces an existing File.
	Force bool
}

// NewCmd is the cobra command.
func NewCmd(deps invocation.Factory) *cobra.Command {
	var o Options
	cmd := &cobra.Command{
		Use:   "save CLUSTER FILE [--member M] [--force]",
		Short: "Stream a snapshot from one member to a local file",
		Long: `save streams a point-in-time copy of one member's database into FILE: the leader by default,
else a healthy voter, or the member --member names. It writes a temporary file next to FILE,
checks etcd's own SHA-256 at the end of the stream, syncs it and renames it into place, so FILE
is either the whole snapshot or untouched. FILE.sha256 gets the digest in sha256sum's format.
Both are readable by you only (mode 0600): a snapshot holds every key. An existing FILE is
replaced only with --force. The stream is bounded by 10 minutes, not --timeout.`,
		Example: `  kubectl etcd snapshot save demo ./demo-$(date +%F).db
  kubectl etcd snapshot save demo ./demo.db --member demo-7vx2m --force
  sha256sum -c ./demo.db.sha256`,
		Args: invocation.ExactArgs("CLUSTER", "FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := deps()
			if err != nil {
				return err
			}
			o.Cluster, o.File = args[0], args[1]
			return Run(cmd.Context(), o, d)
		},
	}
	cmd.Flags().StringVar(&o.Member, "member", "", "member (EtcdMember name) to stream from; default: the leader, else a healthy voter")
	cmd.Flags().BoolVar(&o.Force, "force", false, "replace FILE and FILE.sha256 if they exist")
	return cmd
}

// Report is the command's output.
type Report struct {
	Schema  string `json:"schema"`
	Kind    string `json:"kind"`
	Cluster string `json:"cluster"`
	// Member is the member that served the snapshot; MemberID its etcd ID.
	Member   string `json:"member"`
	MemberID string `json:"memberID"`
	// Revision is the member's revision just before the stream began; the snapshot holds at
	// least every write up to it.
	Revision int64  `json:"revision"`
	File     string `json:"file"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	// ChecksumFile is File + ".sha256".
	ChecksumFile string `json:"checksumFile"`
}

// Run saves the snapshot.
func Run(ctx context.Context, o Options, d *invocation.Deps) error {
	if err := CheckTarget(o.File, o.Force); err != nil {
		return err
	}
	obs, sess, err := etcdobserve.Read(ctx, d, o.Cluster)
	if err != nil {
		return err
	}
	defer func() { _ = sess.Close() }()
	m, err := Pick(obs, o.Member)
	if err != nil {
		return err
	}
	c := obs.State.Cluster
	r := Report{Schema: printer.Schema, Kind: "SnapshotSave", Cluster: c.Namespace + "/" + c.Name, Member: m.Name,
		MemberID: etcdclient.FormatID(m.ID), Revision: m.Status.Revision, File: o.File, ChecksumFile: o.File + ".sha256"}
	_, _ = fmt.Fprintf(d.ErrOut, "Streaming a snapshot of %s from %s at revision %d into %s ...\n", r.Cluster, m.Name, r.Revision, o.File)
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	stream, err := sess.Snapshot(ctx, m.Endpoint)
	if err != nil {
		return fmt.Errorf("starting the snapshot stream from %s: %w", m.Name, err)
	}
	defer func() { _ = stream.Close() }()
	if r.Size, r.SHA256, err = writeSnapshot(o.File, stream); err != nil {
		return fmt.Errorf("saving the snapshot from %s: %w", m.Name, err)
	}
	return printer.Print(d.Out, d.Globals.Output, r, r.Text)
}

// CheckTarget refuses to replace file or its digest file without force. It runs before etcd is
// dialled, so that a refusal costs nothing; a file that appears between the check and the
// rename is replaced, as mv would replace it.
func CheckTarget(file string, force bool) error {
	for _, p := range []string{file, file + ".sha256"} {
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return invocation.Usagef("%s is a directory; name the snapshot file to write", p)
		case err == nil && !force:
			return invocation.Refused(RuleFileExists, fmt.Sprintf("%s exists; add --force to replace it", p))
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("checking %s: %w", p, err)
		}
	}
	if fi, err := os.Stat(filepath.Dir(file)); err != nil || !fi.IsDir() {
		return invocation.Usagef("the folder of %s does not exist", file)
	}
	return nil
}

// Pick is the member named member, else the leader when it is a healthy voter, else the first
// healthy voter by name. A learner is never picked: its data may trail the voters'.
func Pick(obs *etcdobserve.Observation, member string) (*etcdobserve.Member, error) {
	if member != "" {
		m, ok := obs.Member(member)
		switch {
		case !ok:
			return nil, invocation.Usagef("--member %s is not a member etcd lists; the members are %s", member, strings.Join(obs.Names(), ", "))
		case m.Learner:
			return nil, invocation.Usagef("--member %s is a learner, whose data may trail the voters'; name a voter", member)
		case m.Status == nil || m.Endpoint == "":
			return nil, fmt.Errorf("member %s cannot stream a snapshot: it did not answer Status (%s)", member, m.StatusErr)
		}
		return m, nil
	}
	if l := obs.Leader(); l != nil && obs.Unhealthy(*l) == "" {
		return l, nil
	}
	var why []string
	for i := range obs.Members {
		m := &obs.Members[i]
		switch unhealthy := obs.Unhealthy(*m); {
		case m.Learner:
			why = append(why, m.Name+" is a learner")
		case unhealthy != "":
			why = append(why, m.Name+" "+unhealthy)
		default:
			return m, nil
		}
	}
	return nil, fmt.Errorf("no healthy voter to stream a snapshot from: %s", strings.Join(why, "; "))
}

// Text renders the report for a person.
func (r Report) Text(w io.Writer) error {
	_, _ = fmt.Fprintf(w, "Saved a snapshot of %s from %s (%s) at revision %d\n", r.Cluster, r.Member, r.MemberID, r.Revision)
	_, _ = fmt.Fprintf(w, "  file    %s\n", r.File)
	_, _ = fmt.Fprintf(w, "  size    %s (%d bytes)\n", humanBytes(r.Size), r.Size)
	_, _ = fmt.Fprintf(w, "  sha256  %s  (in %s)\n", r.SHA256, r.ChecksumFile)
	return nil
}

// humanBytes renders n in binary units with one decimal.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
