package plan

import (
	"fmt"
	"strings"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
)

// Timeouts of the adoption's waits (docs/migration.md, "Adoption steps").
const (
	StatefulSetGoneTimeout   = "2m"
	ClientServiceGoneTimeout = "1m"
)

// steps lists the writes in the order that keeps every intermediate state safe to stop in:
// the new objects exist and are inert (adoption-in-progress) before anything legacy is
// released; Pods and PVCs are re-owned only after their old controllers are orphan-deleted;
// the operator takes over last.
func steps(in Inputs, members []etcdv1alpha2.EtcdMember) []Step {
	tr := in.Translation
	var out []Step
	if tr.Security.AuthWindow {
		out = append(out, Step{Phase: PhaseDisableAuth, Title: "Turn etcd authentication off", Actions: []Action{{
			Verb: VerbCall, Kind: "etcd", Name: "AuthDisable",
			Change: "as the legacy client certificate's user; the backup Job dials without a password, and the operator turns auth on again after step 8",
		}}})
	}
	out = append(out, backupStep(in))
	adopt := []func(*translate.Result, []etcdv1alpha2.EtcdMember, Inputs) Step{
		stepCreateCluster, stepCreateMembers, stepHeadlessOwners, stepOrphanLegacy, stepDeleteLegacyState,
		stepReownPodsAndPVCs, stepCutOverServices, stepHandOver, stepBackups,
	}
	for i, f := range adopt {
		s := f(tr, members, in)
		s.Phase, s.Number = PhaseAdopt, i+1
		out = append(out, s)
	}
	return out
}

func backupStep(in Inputs) Step {
	c := in.Translation.Cluster
	s := Step{Phase: PhaseBackup, Title: "Back the cluster up"}
	if in.Config.SkipBackup {
		s.Actions = []Action{{Verb: VerbSkip, Kind: "Job", Name: backupJobName(c.Name), Change: "--skip-backup: no backup, so no way back"}}
		return s
	}
	s.Actions = []Action{
		{Verb: VerbCreate, Kind: "Job", Name: backupJobName(c.Name),
			Change: "snapshot agent (the operator's image) streams a snapshot to " + orDefault(in.Config.BackupTarget, "the backup destination") + ", with its sha256"},
		{Verb: VerbWait, Kind: "Job", Name: backupJobName(c.Name), Change: "until it completes (polled every 5s, --backup-timeout); a failure leaves this cluster untouched"},
	}
	return s
}

func backupJobName(cluster string) string { return cluster + "-migrate-backup" }

func stepCreateCluster(tr *translate.Result, _ []etcdv1alpha2.EtcdMember, _ Inputs) Step {
	c := tr.Cluster
	var acts []Action
	for _, s := range tr.Secrets {
		acts = append(acts, Action{Verb: VerbCreate, Kind: "Secret", Name: s.Name, Change: fmt.Sprintf("%s: %s", s.Type, secretKeys(s))})
	}
	ann := []string{"adoption-in-progress", "migrated-from=" + translate.MigratedFrom}
	if c.Annotations[etcdv1alpha2.AnnotationPeerAutoTLS] == "true" {
		ann = append(ann, "peer-auto-tls=true")
	}
	acts = append(acts,
		Action{Verb: VerbCreate, Kind: "EtcdCluster", Name: c.Name, Change: "annotated " + strings.Join(ann, ", ") + " (manifest below)"},
		Action{Verb: VerbPatch, Kind: "EtcdCluster", Name: c.Name + " (status)",
			Change: fmt.Sprintf("clusterID %s, clusterToken %s, observed = spec, observedGeneration 1: bootstrap can never run", c.Status.ClusterID, c.Status.ClusterToken)})
	return Step{Title: "Create the EtcdCluster, inert, and its Secrets", Actions: acts}
}

func secretKeys(s translate.GeneratedSecret) string {
	parts := make([]string, 0, len(s.Keys))
	for _, k := range s.Keys {
		switch {
		case k.Random:
			parts = append(parts, k.Key+" ← random")
		case k.Value != "":
			parts = append(parts, k.Key+" = "+k.Value)
		default:
			parts = append(parts, k.Key+" ← "+strings.Join(k.From, " + "))
		}
	}
	return strings.Join(parts, ", ")
}

func stepCreateMembers(tr *translate.Result, members []etcdv1alpha2.EtcdMember, _ Inputs) Step {
	var acts []Action
	for _, m := range members {
		acts = append(acts,
			Action{Verb: VerbCreate, Kind: "EtcdMember", Name: m.Name, Change: fmt.Sprintf(
				"headless-service-name=%s, data-dir-subpath=%s, adoption-in-progress, template-hash=%s; controller ownerReference → EtcdCluster %s",
				tr.HeadlessService, tr.DataDirSubPath, m.Annotations[etcdv1alpha2.AnnotationTemplateHash], tr.Cluster.Name)},
			Action{Verb: VerbPatch, Kind: "EtcdMember", Name: m.Name + " (status)", Change: fmt.Sprintf(
				"memberID %s, podName %s, podUID %s, pvcName %s, isVoter true", m.Status.MemberID, m.Status.PodName, m.Status.PodUID, m.Status.PVCName)})
	}
	return Step{Title: "Create one EtcdMember per Pod, named like it", Actions: acts}
}

func stepHeadlessOwners(tr *translate.Result, members []etcdv1alpha2.EtcdMember, _ Inputs) Step {
	return Step{Title: "Hand the legacy headless Service to the adopted members", Actions: []Action{{
		Verb: VerbPatch, Kind: "Service", Name: tr.HeadlessService,
		Change: fmt.Sprintf("ownerReferences = one non-controller reference per adopted member (%s): collected once the last of them is replaced", memberNames(members)),
	}}}
}

func stepOrphanLegacy(tr *translate.Result, _ []etcdv1alpha2.EtcdMember, _ Inputs) Step {
	name := tr.Cluster.Name
	return Step{Title: "Release the legacy objects without deleting their dependents", Actions: []Action{
		{Verb: VerbOrphanDelete, Kind: "EtcdCluster." + legacy.Group, Name: name, Change: "propagationPolicy Orphan: its Services, ConfigMap and PDB stay"},
		{Verb: VerbOrphanDelete, Kind: "StatefulSet", Name: legacy.StatefulSetName(name), Change: "propagationPolicy Orphan: Pods and PVCs stay, nothing restarts"},
		{Verb: VerbWait, Kind: "StatefulSet", Name: legacy.StatefulSetName(name), Change: "until it is gone (" + StatefulSetGoneTimeout + ")"},
	}}
}

func stepDeleteLegacyState(tr *translate.Result, _ []etcdv1alpha2.EtcdMember, in Inputs) Step {
	name := tr.Cluster.Name
	s := Step{Title: "Delete the legacy bootstrap state and PDB"}
	if in.Present.StateConfigMap {
		s.Actions = append(s.Actions, Action{Verb: VerbDelete, Kind: "ConfigMap", Name: legacy.StateConfigMapName(name), Change: "running etcd read it at start only"})
	}
	if in.Present.PDB {
		s.Actions = append(s.Actions, Action{Verb: VerbDelete, Kind: "PodDisruptionBudget", Name: legacy.PDBName(name), Change: "the operator's PDB takes the name"})
	}
	if len(s.Actions) == 0 {
		s.Actions = []Action{{Verb: VerbSkip, Kind: "ConfigMap", Name: legacy.StateConfigMapName(name), Change: "neither it nor a legacy PDB exists"}}
	}
	return s
}

func stepReownPodsAndPVCs(tr *translate.Result, members []etcdv1alpha2.EtcdMember, _ Inputs) Step {
	c := tr.Cluster
	pvcOwner := "ownerReference → EtcdCluster " + c.Name + " (reclaimPolicy Delete)"
	if c.Spec.Storage.ReclaimPolicy == etcdv1alpha2.ReclaimPolicyRetain {
		pvcOwner = "no ownerReference (reclaimPolicy Retain: the PVC outlives the EtcdCluster, as it outlived the legacy one)"
	}
	var acts []Action
	for _, m := range members {
		acts = append(acts,
			Action{Verb: VerbPatch, Kind: "Pod", Name: m.Name, Change: fmt.Sprintf(
				"labels %s=%s, %s=%s, %s=%s; annotation template-hash=%s; controller ownerReference → EtcdMember %s (no restart)",
				etcdv1alpha2.LabelCluster, c.Name, etcdv1alpha2.LabelComponent, m.Name, etcdv1alpha2.LabelRole, etcdv1alpha2.RoleVoter,
				m.Annotations[etcdv1alpha2.AnnotationTemplateHash], m.Name)},
			Action{Verb: VerbPatch, Kind: "PersistentVolumeClaim", Name: m.Status.PVCName, Change: fmt.Sprintf(
				"labels %s=%s, %s=%s; annotation member-uid=<uid of EtcdMember %s>; %s",
				etcdv1alpha2.LabelCluster, c.Name, etcdv1alpha2.LabelComponent, m.Name, m.Name, pvcOwner)})
	}
	return Step{Title: "Re-own the Pods and PVCs", Actions: acts}
}

func stepCutOverServices(tr *translate.Result, _ []etcdv1alpha2.EtcdMember, in Inputs) Step {
	c := tr.Cluster
	headless := desired.HeadlessServiceName(c.Name)
	s := Step{Title: "Cut the client Service over"}
	if tr.ClientService == c.Name && in.Present.ClientService {
		s.Actions = append(s.Actions,
			Action{Verb: VerbDelete, Kind: "Service", Name: c.Name, Change: "the legacy ClusterIP Service"},
			Action{Verb: VerbWait, Kind: "Service", Name: c.Name, Change: "until it is gone (" + ClientServiceGoneTimeout + "); from here to the next action " + c.Name + ":2379 does not resolve (the cut-over gap)"})
	} else if tr.ClientService != c.Name {
		s.Actions = append(s.Actions, Action{Verb: VerbKeep, Kind: "Service", Name: tr.ClientService, Change: "the legacy client Service under its own name is left in place (see warnings)"})
	}
	s.Actions = append(s.Actions, Action{Verb: VerbCreate, Kind: "Service", Name: headless,
		Change: "headless, selecting the cluster label, ports client 2379 and peer 2380; ownerReference → EtcdCluster " + c.Name + "; " + c.Name + ":2379 resolves again within seconds"})
	return s
}

func stepHandOver(tr *translate.Result, members []etcdv1alpha2.EtcdMember, _ Inputs) Step {
	var acts []Action
	for _, m := range members {
		acts = append(acts, Action{Verb: VerbPatch, Kind: "EtcdMember", Name: m.Name, Change: "remove adoption-in-progress"})
	}
	acts = append(acts, Action{Verb: VerbPatch, Kind: "EtcdCluster", Name: tr.Cluster.Name, Change: "remove adoption-in-progress: the operator takes over"})
	return Step{Title: "Hand the cluster to the operator", Actions: acts}
}

// then is what the operator does once it has taken over.
func then(tr *translate.Result) []string {
	c := tr.Cluster
	out := []string{
		"the operator creates the client Service " + desired.ClientServiceName(c.Name) + " and the PodDisruptionBudget " + desired.PDBName(c.Name) + " (minAvailable = quorum)",
	}
	if c.Spec.Auth != nil && c.Spec.Auth.Enabled {
		out = append(out, "the operator sets root's password from Secret "+c.Spec.Auth.RootCredentialsSecretRef.Name+" and turns auth on (the end of the auth window)")
	}
	return append(out, "later template changes roll the adopted members one at a time; until then no member restarts")
}

func memberNames(members []etcdv1alpha2.EtcdMember) string {
	names := make([]string, 0, len(members))
	for _, m := range members {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
