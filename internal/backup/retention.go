package backup

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// OwningSchedule is the controller reference of the EtcdSnapshotSchedule that s belongs to, or
// nil for a one-off snapshot. A snapshot belongs to a schedule when the schedule controls it and
// it carries the schedule's label with the same name, as the schedule creates its snapshots
// (docs/backup-restore.md, "Schedules"): only then does its Job mark the artifact as the
// schedule's and apply the schedule's retention, so a snapshot someone labelled by hand never
// prunes anything.
func OwningSchedule(s *etcdv1alpha2.EtcdSnapshot) *metav1.OwnerReference {
	ref := metav1.GetControllerOf(s)
	if ref == nil || ref.Kind != "EtcdSnapshotSchedule" || ref.UID == "" || s.Labels[etcdv1alpha2.LabelSchedule] != ref.Name {
		return nil
	}
	if gv, _, _ := strings.Cut(ref.APIVersion, "/"); gv != etcdv1alpha2.GroupVersion.Group {
		return nil
	}
	return ref
}

// Pruning is what the schedule's retention did after the snapshot was stored, as its agent
// reported it (docs/backup-restore.md, "Retention").
type Pruning struct {
	// Pruned names the deleted artifacts, oldest first; the agent shortens a long list, so
	// Count counts them all.
	Pruned []string
	Count  int
	// Error says why pruning failed or stopped; empty when it did not.
	Error string
}

// maxListedBytes bounds the artifact names a summary lists: the summary goes into an Event,
// whose note the API server caps at 1 KiB, and into the Ready message.
const maxListedBytes = 400

// Summary says what the pruning did in a sentence fragment, "" when it did nothing: the count
// and the names (as many as fit, then how many more), or the error.
func (p Pruning) Summary() string {
	var parts []string
	if p.Count > 0 {
		parts = append(parts, fmt.Sprintf("pruned %d older artifact%s of the schedule: %s", p.Count, plural(p.Count), p.listed()))
	}
	if p.Error != "" {
		parts = append(parts, "the schedule's retention failed, the snapshot is stored: "+p.Error)
	}
	return strings.Join(parts, "; ")
}

// listed names the pruned artifacts within maxListedBytes.
func (p Pruning) listed() string {
	var b strings.Builder
	shown := 0
	for _, name := range p.Pruned {
		if shown > 0 && b.Len()+len(name) > maxListedBytes {
			break
		}
		if shown > 0 {
			b.WriteString(", ")
		}
		b.WriteString(name)
		shown++
	}
	if more := p.Count - shown; more > 0 {
		if shown > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "and %d more", more)
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
