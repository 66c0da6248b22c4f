package translate

import "sort"

// Code is the stable, machine-readable name of a warning or a refusal; scripts match on it
// (etcd-migrate -o json), so a code is never renamed.
type Code string

// Refusal codes (docs/migration.md, "Refusals"). A refused cluster is left untouched while the
// others are adopted.
const (
	RefusalLearnerPresent       Code = "LearnerPresent"
	RefusalMemberPodMismatch    Code = "MemberPodMismatch"
	RefusalNoMembers            Code = "NoMembers"
	RefusalTooManyMembers       Code = "TooManyMembers"
	RefusalEmptyDirStorage      Code = "EmptyDirStorage"
	RefusalClaimTemplateName    Code = "ClaimTemplateName"
	RefusalDataDirLayout        Code = "DataDirLayout"
	RefusalStorageTooSmall      Code = "StorageTooSmall"
	RefusalStatefulSetMissing   Code = "StatefulSetMissing"
	RefusalVersionUnparsable    Code = "VersionUnparsable"
	RefusalVersionTooOld        Code = "VersionTooOld"
	RefusalVersionMismatch      Code = "VersionMismatch"
	RefusalOptionInvalid        Code = "OptionInvalid"
	RefusalAuthWithoutServerTLS Code = "AuthWithoutServerTLS"
	RefusalAuthStateMismatch    Code = "AuthStateMismatch"
	RefusalAuthSecretNamespace  Code = "AuthSecretNamespace"
	RefusalTLSSecretInvalid     Code = "TLSSecretInvalid"
	RefusalServerCAUnknown      Code = "ServerCAUnknown"
	RefusalInspectionFailed     Code = "InspectionFailed"
	RefusalSplitBrain           Code = "SplitBrain"
	RefusalAlarmsActive         Code = "AlarmsActive"
	RefusalMemberUnhealthy      Code = "MemberUnhealthy"
	RefusalHashKVMismatch       Code = "HashKVMismatch"
	RefusalPVCMissing           Code = "PVCMissing"
	RefusalPVCForeignOwner      Code = "PVCForeignOwner"
	RefusalPeerURLLayout        Code = "PeerURLLayout"
	RefusalNameInvalid          Code = "NameInvalid"
	RefusalServiceNameConflict  Code = "ServiceNameConflict"
	// RefusalBackupFailed is decided by the backup phase, not by translation; it is declared
	// here so that every refusal code lives in one list.
	RefusalBackupFailed Code = "BackupFailed"
)

// Warning codes: the cluster is adopted, and the plan says what changes.
const (
	WarnReplicasDiffer         Code = "ReplicasDiffer"
	WarnImageRepository        Code = "ImageRepositoryDiffers"
	WarnAccessModes            Code = "AccessModes"
	WarnStorageClassDiffers    Code = "StorageClassDiffers"
	WarnOptionDropped          Code = "OptionDropped"
	WarnQuotaChanged           Code = "QuotaChanged"
	WarnPodTemplateDropped     Code = "PodTemplateFieldDropped"
	WarnMetadataKeyDropped     Code = "MetadataKeyDropped"
	WarnServiceTemplateDropped Code = "ServiceTemplateFieldDropped"
	WarnClientServiceKept      Code = "ClientServiceKept"
	WarnUnauthenticatedExposed Code = "UnauthenticatedServiceExposed"
	WarnPDBStricter            Code = "PDBStricter"
	WarnCAMerge                Code = "CAMerge"
	WarnPeerAutoTLS            Code = "PeerAutoTLS"
	WarnClientSecretDropped    Code = "ClientSecretDropped"
	WarnCertificateSANs        Code = "CertificateSANs"
	WarnAuthWindow             Code = "AuthWindow"
	WarnSecurityContext        Code = "SecurityContextRestricted"
	WarnReleaseLabels          Code = "HeadlessServiceReleaseLabels"
	WarnRestoreDropped         Code = "RestoreDropped"
)

// Finding is one warning or refusal: a stable code, the field it is about (a legacy field as
// spec.…, or an object), what happens and why, and what the user can do about it.
type Finding struct {
	Code Code `json:"code"`
	// Field names the legacy field or object concerned, e.g. "spec.options.enable-v2" or
	// "PersistentVolumeClaim data-etcd-1".
	Field string `json:"field,omitempty"`
	// Message says what happens and why.
	Message string `json:"message"`
	// Fix says what to do about it; empty when nothing needs doing.
	Fix string `json:"fix,omitempty"`
	// Security marks findings that weaken or widen security; renderers prefix them
	// "⚠ SECURITY".
	Security bool `json:"security,omitempty"`
}

// findings accumulates warnings and refusals in order of discovery; sorted on output so that
// map iteration never changes a plan.
type findings struct {
	warnings, refusals []Finding
}

func (f *findings) warn(code Code, field, message, fix string) {
	f.warnings = append(f.warnings, Finding{Code: code, Field: field, Message: message, Fix: fix})
}

func (f *findings) warnSecurity(code Code, field, message, fix string) {
	f.warnings = append(f.warnings, Finding{Code: code, Field: field, Message: message, Fix: fix, Security: true})
}

func (f *findings) refuse(code Code, field, message, fix string) {
	f.refusals = append(f.refusals, Finding{Code: code, Field: field, Message: message, Fix: fix})
}

// sorted orders findings by code, then field, keeping the first of exact duplicates.
func sorted(in []Finding) []Finding {
	out := make([]Finding, 0, len(in))
	seen := map[Finding]bool{}
	for _, f := range in {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Code != out[j].Code {
			return out[i].Code < out[j].Code
		}
		return out[i].Field < out[j].Field
	})
	return out
}
