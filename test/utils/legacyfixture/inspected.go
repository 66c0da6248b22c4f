package legacyfixture

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
)

// ClusterID is the cluster ID Inspected reports for every fixture cluster.
const ClusterID = "8e9e05c52164694d"

// MemberID is the member ID Inspected reports for ordinal i.
func MemberID(i int) string { return fmt.Sprintf("%016x", uint64(0xa1b2c3d4e5f60000)+uint64(i)) }

// Inspected is the translation input etcd-migrate would gather from s once it has formed and is
// healthy: the legacy objects as the API server returns them (the EtcdCluster through its
// unstructured form), the Pods and PVCs the StatefulSet controller made, summaries of the TLS
// Secrets, and etcd's view of a healthy cluster whose members advertise the legacy peer URLs.
// With Options.Auth, etcd reports auth on, as the legacy operator would have turned it on.
// Tests change what they need from there.
func (s *Set) Inspected(cfg translate.Config) (translate.Input, error) {
	u, err := legacy.ToUnstructured(s.Cluster)
	if err != nil {
		return translate.Input{}, err
	}
	c, err := legacy.DecodeCluster(u)
	if err != nil {
		return translate.Input{}, err
	}
	in := translate.Input{
		Cluster: c, StatefulSet: s.StatefulSet.DeepCopy(),
		HeadlessService: s.HeadlessService.DeepCopy(), ClientService: s.ClientService.DeepCopy(),
		StateConfigMap: s.StateConfigMap.DeepCopy(), PDB: s.PDB.DeepCopy(),
		Secrets: map[string]translate.SecretSummary{}, Config: cfg,
	}
	for _, p := range s.ExpectedPods() {
		in.Pods = append(in.Pods, *p)
	}
	for _, p := range s.ExpectedPVCs() {
		in.PVCs = append(in.PVCs, *p)
	}
	for _, sec := range s.Secrets {
		in.Secrets[sec.Name] = translate.Summarize(sec)
	}
	in.Etcd = s.etcdFacts()
	return in, nil
}

func (s *Set) etcdFacts() *translate.EtcdFacts {
	_, tag := translate.SplitImage(s.Options.Image)
	e := &translate.EtcdFacts{ClusterIDs: []string{ClusterID}, Version: trimV(tag), AuthEnabled: s.Options.Auth}
	headless := legacy.HeadlessServiceName(s.Cluster)
	for i := range int(s.Options.Replicas) {
		pod := legacy.PodName(s.Options.Name, i)
		e.Members = append(e.Members, translate.EtcdMember{
			ID: MemberID(i), Name: pod,
			PeerURLs: []string{fmt.Sprintf("https://%s.%s.%s.svc:%d", pod, headless, s.Options.Namespace, legacy.PeerPort)},
		})
	}
	return e
}

func trimV(tag string) string {
	if len(tag) > 0 && tag[0] == 'v' {
		return tag[1:]
	}
	return tag
}

// Summaries is translate.Summarize over secrets, by name.
func Summaries(secrets ...*corev1.Secret) map[string]translate.SecretSummary {
	out := map[string]translate.SecretSummary{}
	for _, s := range secrets {
		out[s.Name] = translate.Summarize(s)
	}
	return out
}
