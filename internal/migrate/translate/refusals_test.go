package translate_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// Every refusal of docs/migration.md that objects and inspection facts decide, each from one
// change to a healthy cluster, and each alone: the other rules must not fire with it.
func TestRefusals(t *testing.T) {
	t.Parallel()
	setImage := func(in *translate.Input, image string) {
		in.StatefulSet.Spec.Template.Spec.Containers[0].Image = image
	}
	for name, tc := range map[string]struct {
		opts   legacyfixture.Options
		cfg    translate.Config
		mutate func(*translate.Input)
		want   []translate.Code
	}{
		"emptyDir storage": {opts: legacyfixture.Options{EmptyDir: true},
			want: []translate.Code{translate.RefusalEmptyDirStorage}},
		"a learner": {mutate: func(in *translate.Input) { in.Etcd.Members[2].IsLearner = true },
			want: []translate.Code{translate.RefusalLearnerPresent}},
		// Listed first (etcd lists by member ID), a learner added by hand does not decide the
		// voters' peer scheme: no PeerURLLayout for them.
		"a learner first, with a plain-HTTP peer URL": {mutate: func(in *translate.Input) {
			in.Etcd.Members = append([]translate.EtcdMember{{ID: "01", PeerURLs: []string{"http://10.0.0.9:2380"}, IsLearner: true}}, in.Etcd.Members...)
		}, want: []translate.Code{translate.RefusalLearnerPresent}},
		"a member whose Pod is not Running": {mutate: func(in *translate.Input) { in.Pods[1].Status.Phase = corev1.PodPending },
			want: []translate.Code{translate.RefusalMemberPodMismatch}},
		"a member never started": {mutate: func(in *translate.Input) {
			in.Etcd.Members = append(in.Etcd.Members, translate.EtcdMember{ID: "ff", PeerURLs: []string{"https://etcd-3.etcd-headless.default.svc:2380"}})
		}, want: []translate.Code{translate.RefusalMemberPodMismatch}},
		"a Pod without a member": {mutate: func(in *translate.Input) { in.Etcd.Members = in.Etcd.Members[:2] },
			want: []translate.Code{translate.RefusalMemberPodMismatch}},
		"an image tag that is not a version": {mutate: func(in *translate.Input) { setImage(in, "registry.k8s.io/etcd:3.5.12-0") },
			want: []translate.Code{translate.RefusalVersionUnparsable}},
		"etcd 3.4": {mutate: func(in *translate.Input) { setImage(in, "quay.io/coreos/etcd:v3.4.27"); in.Etcd.Version = "3.4.27" },
			want: []translate.Code{translate.RefusalVersionTooOld}},
		"members run another version than the image tag says": {mutate: func(in *translate.Input) { in.Etcd.Version = "3.5.11" },
			want: []translate.Code{translate.RefusalVersionMismatch}},
		"auth without server TLS": {opts: legacyfixture.Options{Auth: true},
			want: []translate.Code{translate.RefusalAuthWithoutServerTLS}},
		"auth on in etcd but not in the spec": {mutate: func(in *translate.Input) { in.Etcd.AuthEnabled = true },
			want: []translate.Code{translate.RefusalAuthStateMismatch}},
		"auth secret in another namespace": {opts: legacyfixture.Options{Variant: legacyfixture.TLS, Auth: true}, cfg: translate.Config{AuthSecret: "other/root"},
			want: []translate.Code{translate.RefusalAuthSecretNamespace}},
		"inspection failed": {mutate: func(in *translate.Input) { in.Etcd, in.InspectionError = nil, "no Running Pod to port-forward to" },
			want: []translate.Code{translate.RefusalInspectionFailed}},
		"split brain": {mutate: func(in *translate.Input) { in.Etcd.ClusterIDs = append(in.Etcd.ClusterIDs, "1234") },
			want: []translate.Code{translate.RefusalSplitBrain}},
		"an alarm": {mutate: func(in *translate.Input) { in.Etcd.Alarms = []string{"NOSPACE on etcd-1"} },
			want: []translate.Code{translate.RefusalAlarmsActive}},
		"an unhealthy member": {mutate: func(in *translate.Input) { in.Etcd.Unhealthy = []string{"etcd-2"} },
			want: []translate.Code{translate.RefusalMemberUnhealthy}},
		"HashKV mismatch": {mutate: func(in *translate.Input) { in.Etcd.HashKVMismatch = true },
			want: []translate.Code{translate.RefusalHashKVMismatch}},
		"a PVC missing": {mutate: func(in *translate.Input) { in.PVCs = in.PVCs[1:] },
			want: []translate.Code{translate.RefusalPVCMissing}},
		"a PVC owned by a foreign controller": {mutate: func(in *translate.Input) {
			in.PVCs[0].OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "other", Controller: ptr.To(true)}}
		}, want: []translate.Code{translate.RefusalPVCForeignOwner}},
		"a peer URL by IP": {mutate: func(in *translate.Input) { in.Etcd.Members[0].PeerURLs = []string{"https://10.0.0.5:2380"} },
			want: []translate.Code{translate.RefusalPeerURLLayout}},
		"two peer URLs": {mutate: func(in *translate.Input) {
			in.Etcd.Members[0].PeerURLs = append(in.Etcd.Members[0].PeerURLs, "https://10.0.0.5:2380")
		}, want: []translate.Code{translate.RefusalPeerURLLayout}},
		"a renamed claim template": {mutate: func(in *translate.Input) {
			in.StatefulSet.Spec.VolumeClaimTemplates[0].Name = "etcd-data"
		}, want: []translate.Code{translate.RefusalClaimTemplateName}},
		"a data dir at the volume root": {mutate: func(in *translate.Input) {
			c := &in.StatefulSet.Spec.Template.Spec.Containers[0]
			c.Args = append(c.Args, "--data-dir=/var/run/etcd")
		}, want: []translate.Code{translate.RefusalDataDirLayout}},
		"a non-integer snapshot count": {opts: legacyfixture.Options{Options: map[string]string{"snapshot-count": "lots"}},
			want: []translate.Code{translate.RefusalOptionInvalid}},
		"a quota beyond the volume": {opts: legacyfixture.Options{StorageSize: resource.MustParse("1Gi"), Options: map[string]string{"quota-backend-bytes": "8589934592"}},
			want: []translate.Code{translate.RefusalOptionInvalid}},
		"an unknown compaction mode": {opts: legacyfixture.Options{Options: map[string]string{"auto-compaction-mode": "hourly"}},
			want: []translate.Code{translate.RefusalOptionInvalid}},
		"a duration retention in revision mode": {opts: legacyfixture.Options{Options: map[string]string{"auto-compaction-mode": "revision"}},
			want: []translate.Code{translate.RefusalOptionInvalid}},
		"volumes below 256Mi": {opts: legacyfixture.Options{StorageSize: resource.MustParse("128Mi")},
			want: []translate.Code{translate.RefusalStorageTooSmall}},
		"a name too long for this API": {opts: legacyfixture.Options{Name: strings.Repeat("e", 57), HeadlessServiceName: "peers"},
			want: []translate.Code{translate.RefusalNameInvalid}},
		"the headless Service named like the cluster": {opts: legacyfixture.Options{Name: "etcd", HeadlessServiceName: "etcd"},
			want: []translate.Code{translate.RefusalServiceNameConflict}},
		"no StatefulSet": {mutate: func(in *translate.Input) { in.StatefulSet = nil },
			want: []translate.Code{translate.RefusalStatefulSetMissing}},
		"a TLS Secret missing": {opts: legacyfixture.Options{Variant: legacyfixture.TLS}, mutate: func(in *translate.Input) { delete(in.Secrets, "etcd-peer-ca") },
			want: []translate.Code{translate.RefusalTLSSecretInvalid}},
		"no CA for the server certificate": {opts: legacyfixture.Options{Variant: legacyfixture.PeerAutoTLS}, mutate: func(in *translate.Input) {
			in.Cluster.Spec.Security.TLS.ServerTrustedCASecret = ""
		}, want: []translate.Code{translate.RefusalServerCAUnknown}},
		"nine members": {opts: legacyfixture.Options{Replicas: 9},
			want: []translate.Code{translate.RefusalTooManyMembers}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := tc.opts
			o.Formed = true
			in, _ := inspected(t, o, tc.cfg)
			if tc.mutate != nil {
				tc.mutate(&in)
			}
			r := translate.Translate(in)
			got := codes(r.Refusals)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("refusals (-want +got):\n%s\n%+v", diff, r.Refusals)
			}
			for _, f := range r.Refusals {
				if f.Message == "" || f.Field == "" {
					t.Errorf("refusal %s lacks a field or a message: %+v", f.Code, f)
				}
			}
		})
	}
}

func TestVersionOverrideReadsAnUnparsableTag(t *testing.T) {
	t.Parallel()
	in, _ := inspected(t, legacyfixture.Options{Formed: true}, translate.Config{Version: "v3.5.12"})
	in.StatefulSet.Spec.Template.Spec.Containers[0].Image = "registry.k8s.io/etcd:3.5.12-0"
	r := translate.Translate(in)
	if r.Refused() || r.Cluster.Spec.Version != "3.5.12" {
		t.Errorf("version %q, refusals %+v", r.Cluster.Spec.Version, r.Refusals)
	}
	if !hasCode(r.Warnings, translate.WarnImageRepository) {
		t.Error("registry.k8s.io/etcd is not the operator's repository, but nothing warns")
	}
}

// TestUnparsableVersionFixNamesTheRunningVersion: the fix gives the version the members run
// and the cluster to name, since --version applies to every cluster of the run.
func TestUnparsableVersionFixNamesTheRunningVersion(t *testing.T) {
	t.Parallel()
	in, _ := inspected(t, legacyfixture.Options{Formed: true}, translate.Config{})
	in.StatefulSet.Spec.Template.Spec.Containers[0].Image = "registry.k8s.io/etcd:3.5.12-0"
	r := translate.Translate(in)
	if len(r.Refusals) != 1 || r.Refusals[0].Code != translate.RefusalVersionUnparsable {
		t.Fatalf("refusals %+v, want VersionUnparsable alone", r.Refusals)
	}
	want := "--version " + in.Etcd.Version + " --cluster " + in.Cluster.Name
	if fix := r.Refusals[0].Fix; !strings.Contains(fix, want) {
		t.Errorf("fix %q does not say %q", fix, want)
	}
}

func TestNoLegacyClusterIsARefusal(t *testing.T) {
	t.Parallel()
	r := translate.Translate(translate.Input{})
	if !r.Refused() || r.Cluster != nil {
		t.Errorf("translated nothing into %+v", r)
	}
	if legacy.GroupVersion.String() != translate.MigratedFrom {
		t.Errorf("migrated-from = %s", translate.MigratedFrom)
	}
}
