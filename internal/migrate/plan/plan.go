package plan

import (
	corev1 "k8s.io/api/core/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
)

// Schema names the JSON shape of a Report; it changes only with an incompatible change.
const Schema = "etcd-migrate/v1"

// Verdicts of a plan.
const (
	VerdictAdopt   = "adopt"
	VerdictRefused = "refused"
)

// Config is what the plan needs from the command line and this project's operator.
type Config struct {
	// ImageRepository is the operator's --etcd-image-repository ("" = its default) and
	// GuardImage the operator's own image, which PVC members' data-dir guard runs from: both
	// enter the template hash.
	ImageRepository, GuardImage string
	// SnapshotScheduleServed says the EtcdSnapshotSchedule CRD is served.
	SnapshotScheduleServed bool
	// SkipBackup is --skip-backup; BackupTarget describes the backup destination
	// ("s3://bucket/prefix", "pvc://claim/path").
	SkipBackup   bool
	BackupTarget string
}

// Inputs are one cluster's translation and the legacy objects the plan acts on.
type Inputs struct {
	Translation *translate.Result
	// Present says which optional legacy objects exist.
	Present Present
	// Backups and Schedules are the legacy backup objects of this cluster.
	Backups   []legacy.EtcdBackup
	Schedules []legacy.EtcdBackupSchedule
	Config    Config
}

// Present lists which of the legacy objects a plan deletes exist.
type Present struct {
	StateConfigMap, PDB, ClientService bool
}

// Plan is one cluster's adoption plan.
type Plan struct {
	// Cluster is namespace/name.
	Cluster string `json:"cluster"`
	Verdict string `json:"verdict"`
	// Version and Members summarise the cluster adopted.
	Version  string              `json:"version,omitempty"`
	Members  []Member            `json:"members"`
	Security translate.Security  `json:"security"`
	Refusals []translate.Finding `json:"refusals"`
	Warnings []translate.Finding `json:"warnings"`
	// Secrets are the Secrets generated in step 1.
	Secrets []translate.GeneratedSecret `json:"secrets"`
	// Steps are the writes in order; empty for a refused cluster.
	Steps []Step `json:"steps"`
	// Then says what the operator does once the last step is done.
	Then []string `json:"then,omitempty"`
	// Objects are the manifests created in steps 1 and 2.
	Objects *Objects `json:"objects,omitempty"`
}

// Member is one adopted member.
type Member struct {
	Name         string `json:"name"`
	MemberID     string `json:"memberID"`
	PVCName      string `json:"pvcName"`
	TemplateHash string `json:"templateHash"`
}

// Objects are the manifests etcd-migrate creates, status included.
type Objects struct {
	EtcdCluster *etcdv1alpha2.EtcdCluster `json:"etcdCluster"`
	EtcdMembers []etcdv1alpha2.EtcdMember `json:"etcdMembers"`
	Service     *corev1.Service           `json:"service"`
}

// Step is one numbered step of the adoption (or a phase before it).
type Step struct {
	// Phase is "disable-auth", "backup" or "adopt".
	Phase string `json:"phase"`
	// Number is the adoption step, 1–9; 0 before the adoption.
	Number  int      `json:"number,omitempty"`
	Title   string   `json:"title"`
	Actions []Action `json:"actions"`
}

// Action is one write, wait or call.
type Action struct {
	// Verb is create, patch, delete, orphan-delete, wait, call, keep or skip.
	Verb   string `json:"verb"`
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Change string `json:"change"`
}

// Phases and verbs.
const (
	PhaseDisableAuth = "disable-auth"
	PhaseBackup      = "backup"
	PhaseAdopt       = "adopt"

	VerbCreate       = "create"
	VerbPatch        = "patch"
	VerbDelete       = "delete"
	VerbOrphanDelete = "orphan-delete"
	VerbWait         = "wait"
	VerbCall         = "call"
	VerbKeep         = "keep"
	VerbSkip         = "skip"
)

// New plans the adoption of one translated cluster. A refused translation plans nothing: the
// cluster is left untouched.
func New(in Inputs) *Plan {
	tr := in.Translation
	p := &Plan{
		Verdict: VerdictAdopt, Members: []Member{}, Security: tr.Security,
		Refusals: tr.Refusals, Warnings: tr.Warnings, Secrets: tr.Secrets, Steps: []Step{},
	}
	if p.Secrets == nil {
		p.Secrets = []translate.GeneratedSecret{}
	}
	if tr.Cluster != nil {
		p.Cluster = tr.Cluster.Namespace + "/" + tr.Cluster.Name
		p.Version = tr.Cluster.Spec.Version
	}
	if tr.Refused() {
		p.Verdict = VerdictRefused
		return p
	}
	members := Members(tr, in.Config)
	for i, m := range tr.Members {
		p.Members = append(p.Members, Member{Name: m.Name, MemberID: m.ID, PVCName: m.PVCName,
			TemplateHash: members[i].Annotations[etcdv1alpha2.AnnotationTemplateHash]})
	}
	headless, _ := nativeServices(tr.Cluster)
	p.Objects = &Objects{EtcdCluster: tr.Cluster, EtcdMembers: members, Service: headless}
	p.Steps = steps(in, members)
	p.Then = then(tr)
	return p
}
