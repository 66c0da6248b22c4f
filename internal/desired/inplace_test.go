package desired

import (
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

func inPlaceMember(voter bool, md *etcdv1alpha2.AdditionalMetadata) *etcdv1alpha2.EtcdMember {
	return &etcdv1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-abcde", Namespace: "ns", UID: "uid-1"},
		Spec: etcdv1alpha2.EtcdMemberSpec{
			ClusterName: "etcd", Version: "3.6.5", InitialCluster: "x", ClusterToken: "t",
			AdditionalMetadata: md,
		},
		Status: etcdv1alpha2.EtcdMemberStatus{IsVoter: voter},
	}
}

// The in-place metadata must be exactly what the builders render, or the member controller would
// patch every Pod and PVC it has just created.
func TestInPlaceMetadataMatchesBuilders(t *testing.T) {
	t.Parallel()
	md := &etcdv1alpha2.AdditionalMetadata{
		Labels:      map[string]string{"team": "a", etcdv1alpha2.LabelRole: "spoof", etcdv1alpha2.LabelCluster: "other"},
		Annotations: map[string]string{"note": "n", etcdv1alpha2.AnnotationTemplateHash: "spoof"},
	}
	for _, voter := range []bool{false, true} {
		for _, meta := range []*etcdv1alpha2.AdditionalMetadata{nil, md} {
			m := inPlaceMember(voter, meta)
			pod := Pod(m, Inputs{State: ClusterStateExisting})
			if diff := cmp.Diff(pod.Labels, MemberPodLabels(m)); diff != "" {
				t.Errorf("voter=%v metadata=%v: Pod labels differ (-pod +in-place):\n%s", voter, meta != nil, diff)
			}
			pvc := PVC(m, nil)
			if diff := cmp.Diff(pvc.Labels, MemberPVCLabels(m)); diff != "" {
				t.Errorf("voter=%v metadata=%v: PVC labels differ (-pvc +in-place):\n%s", voter, meta != nil, diff)
			}
			for _, obj := range []map[string]string{pod.Annotations, pvc.Annotations} {
				for k, v := range AdditionalAnnotations(m) {
					if obj[k] != v {
						t.Errorf("voter=%v: annotation %s=%q rendered as %q", voter, k, v, obj[k])
					}
				}
			}
		}
	}
}

func TestInPlaceMetadataDropsReservedKeys(t *testing.T) {
	t.Parallel()
	m := inPlaceMember(false, &etcdv1alpha2.AdditionalMetadata{
		Labels:      map[string]string{etcdv1alpha2.LabelRole: etcdv1alpha2.RoleVoter, "team": "a"},
		Annotations: map[string]string{etcdv1alpha2.AnnotationMemberUID: "x", "note": "n"},
	})
	if got := MemberPodLabels(m)[etcdv1alpha2.LabelRole]; got != "" {
		t.Errorf("a learner's Pod got role=%q from additionalMetadata", got)
	}
	if got, want := AdditionalAnnotations(m), map[string]string{"note": "n"}; !maps.Equal(got, want) {
		t.Errorf("AdditionalAnnotations = %v, want %v", got, want)
	}
	if got := AdditionalAnnotations(inPlaceMember(false, nil)); got != nil {
		t.Errorf("AdditionalAnnotations without metadata = %v, want nil", got)
	}
	if got := MemberPodLabels(inPlaceMember(true, nil))[etcdv1alpha2.LabelRole]; got != etcdv1alpha2.RoleVoter {
		t.Errorf("a voter's Pod labels have role=%q, want %q", got, etcdv1alpha2.RoleVoter)
	}
}

func TestCADigest(t *testing.T) {
	t.Parallel()
	if got := CADigest(nil); got != "" {
		t.Errorf("CADigest(nil) = %q, want empty", got)
	}
	a, b := CADigest([]byte("ca-1")), CADigest([]byte("ca-2"))
	if a == b || a != CADigest([]byte("ca-1")) {
		t.Errorf("CADigest is not a stable, content-sensitive digest: %q %q", a, b)
	}
	if len(a) != len("sha256:")+64 || a[:7] != "sha256:" {
		t.Errorf("CADigest = %q, want sha256:<64 hex digits>", a)
	}
}

// Operator labels and additional labels partition what Pod renders: no key is in both, and
// together they are the rendered labels.
func TestPodLabelsPartition(t *testing.T) {
	t.Parallel()
	md := &etcdv1alpha2.AdditionalMetadata{Labels: map[string]string{
		"team": "a", etcdv1alpha2.LabelComponent: "spoof", etcdv1alpha2.LabelRole: "spoof", etcdv1alpha2.ReservedPrefix + "x": "y",
	}}
	for _, voter := range []bool{false, true} {
		m := inPlaceMember(voter, md)
		own, extra := OperatorPodLabels(m), AdditionalLabels(m)
		union := maps.Clone(own)
		for k, v := range extra {
			if _, dup := own[k]; dup {
				t.Errorf("voter=%v: label %s is both the operator's and additional", voter, k)
			}
			union[k] = v
		}
		if diff := cmp.Diff(Pod(m, Inputs{State: ClusterStateExisting}).Labels, union); diff != "" {
			t.Errorf("voter=%v: operator+additional labels differ from the Pod's (-pod +union):\n%s", voter, diff)
		}
		if diff := cmp.Diff(map[string]string{"team": "a"}, extra); diff != "" {
			t.Errorf("AdditionalLabels (-want +got):\n%s", diff)
		}
	}
	if got := AdditionalLabels(inPlaceMember(true, nil)); got != nil {
		t.Errorf("AdditionalLabels without metadata = %v, want nil", got)
	}
}
