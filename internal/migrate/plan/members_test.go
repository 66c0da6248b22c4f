package plan_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/membership"
	"github.com/etcd-operator/etcd-operator/internal/migrate/plan"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// An adopted member must count as updated the moment the operator takes over: its template is
// the latched target's (membership.TemplateCurrent), and its recorded hash is what
// desired.TemplateHash gives for that template, the operator's images and the digests of the
// CA bundles its Secrets hold, computed here from the fixture's CAs, not from the plan.
func TestAdoptedMembersCountAsUpdated(t *testing.T) {
	t.Parallel()
	for name, s := range scenarios {
		if strings.HasPrefix(name, "refused") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, set := s.plan(t)
			c := p.Objects.EtcdCluster
			ca := desired.CADigests{}
			switch set.Options.Variant {
			case legacyfixture.TLS:
				ca.Client = desired.CADigest([]byte(strings.TrimRight(string(set.CAs[legacyfixture.CAServer]), "\n") + "\n" + string(set.CAs[legacyfixture.CAClient])))
				ca.Peer = desired.CADigest(set.CAs[legacyfixture.CAPeer])
			case legacyfixture.PeerAutoTLS:
				ca.Client = desired.CADigest(set.CAs[legacyfixture.CAServer])
			}
			if len(p.Objects.EtcdMembers) != int(set.Options.Replicas) {
				t.Fatalf("%d members for %d Pods", len(p.Objects.EtcdMembers), set.Options.Replicas)
			}
			for _, m := range p.Objects.EtcdMembers {
				if !membership.TemplateCurrent(&m.Spec, c.Status.Observed) {
					t.Errorf("%s: template is not the latched target's", m.Name)
				}
				want := desired.TemplateHash(&m.Spec, desired.MemberImages("", c.Spec.Version, operatorImage), ca)
				if got := m.Annotations[etcdv1alpha2.AnnotationTemplateHash]; got != want {
					t.Errorf("%s: template-hash %s, want %s", m.Name, got, want)
				}
				if desired.PeerURL(&m) != "https://"+m.Name+".etcd-headless."+c.Namespace+".svc:2380" {
					t.Errorf("%s: the operator would advertise %s", m.Name, desired.PeerURL(&m))
				}
				if got := desired.DataDir(m.Annotations[etcdv1alpha2.AnnotationDataDirSubPath]); got != "/var/lib/etcd/default.etcd" {
					t.Errorf("%s: data dir %s", m.Name, got)
				}
			}
		})
	}
}

// The hash must move with what the operator hashes: the guard image and a CA digest.
func TestTemplateHashFollowsItsInputs(t *testing.T) {
	t.Parallel()
	p, _ := scenarios["plaintext-3"].plan(t)
	spec := &p.Objects.EtcdMembers[0].Spec
	base := plan.TemplateHash(spec, desired.CADigests{}, plan.Config{GuardImage: operatorImage})
	if base != p.Members[0].TemplateHash {
		t.Fatalf("plan.TemplateHash = %s, the plan recorded %s", base, p.Members[0].TemplateHash)
	}
	for name, got := range map[string]string{
		"another guard image": plan.TemplateHash(spec, desired.CADigests{}, plan.Config{GuardImage: operatorImage + "-next"}),
		"another repository":  plan.TemplateHash(spec, desired.CADigests{}, plan.Config{GuardImage: operatorImage, ImageRepository: "registry.example.com/etcd"}),
		"a CA digest":         plan.TemplateHash(spec, desired.CADigests{Client: "sha256:00"}, plan.Config{GuardImage: operatorImage}),
	} {
		if got == base {
			t.Errorf("%s does not change the hash", name)
		}
	}
}

func TestMemberObjects(t *testing.T) {
	t.Parallel()
	p, _ := scenarios["tls-auth"].plan(t)
	m := p.Objects.EtcdMembers[1]
	wantAnn := []string{etcdv1alpha2.AnnotationAdoptionInProgress, etcdv1alpha2.AnnotationDataDirSubPath, etcdv1alpha2.AnnotationHeadlessServiceName, etcdv1alpha2.AnnotationTemplateHash}
	var gotAnn []string
	for k := range m.Annotations {
		gotAnn = append(gotAnn, k)
	}
	if diff := cmp.Diff(wantAnn, gotAnn, cmpSorted); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	wantStatus := etcdv1alpha2.EtcdMemberStatus{MemberID: legacyfixture.MemberID(1), PodName: "etcd-1", PodUID: "pod-uid-etcd-1", PVCName: "data-etcd-1", IsVoter: true}
	if diff := cmp.Diff(wantStatus, m.Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	wantTLS := &etcdv1alpha2.EtcdMemberTLS{ClientServerSecretRef: ref("etcd-migrated-server-tls"), ClientMTLS: true, PeerSecretRef: ref("etcd-migrated-peer-tls")}
	if diff := cmp.Diff(wantTLS, m.Spec.TLS); diff != "" {
		t.Errorf("tls (-want +got):\n%s", diff)
	}
	wantInitial := "etcd-0=https://etcd-0.etcd-headless.tenant-c.svc:2380,etcd-1=https://etcd-1.etcd-headless.tenant-c.svc:2380,etcd-2=https://etcd-2.etcd-headless.tenant-c.svc:2380"
	if m.Spec.InitialCluster != wantInitial || m.Spec.ClusterToken != "etcd-tenant-c" || m.Spec.Replicas != 1 {
		t.Errorf("spec: initialCluster %q token %q replicas %d", m.Spec.InitialCluster, m.Spec.ClusterToken, m.Spec.Replicas)
	}
	if m.Labels[etcdv1alpha2.LabelCluster] != "etcd" || m.Labels[etcdv1alpha2.LabelComponent] != "etcd-1" {
		t.Errorf("labels %v", m.Labels)
	}
	if svc := p.Objects.Service; svc.Name != "etcd" || svc.Spec.ClusterIP != "None" {
		t.Errorf("native Service %s %s", svc.Name, svc.Spec.ClusterIP)
	}
}
