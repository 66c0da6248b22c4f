package translate

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

// maxMembers is spec.replicas' maximum (docs/api.md).
const maxMembers = 7

// checkInspection refuses clusters that are not healthy enough to adopt: only a cluster whose
// every member answers, agrees on one cluster ID, has no alarm and the same HashKV is adopted.
func (t *translator) checkInspection() {
	e := t.in.Etcd
	if e == nil {
		t.refuse(RefusalInspectionFailed, "etcd", "inspection failed: "+orDefault(t.in.InspectionError, "etcd was not reached"),
			"make the cluster reachable and healthy, then re-run")
		return
	}
	if len(e.ClusterIDs) > 1 {
		t.refuse(RefusalSplitBrain, "etcd", "members report more than one cluster ID ("+strings.Join(e.ClusterIDs, ", ")+"): a split brain",
			"repair the cluster by hand (see the legacy condition Error/Splitbrain), then re-run")
	}
	if len(e.Alarms) > 0 {
		t.refuse(RefusalAlarmsActive, "etcd", "alarms are active: "+strings.Join(e.Alarms, ", "),
			"resolve and disarm them (for NOSPACE: compact, defragment, disarm), then re-run")
	}
	if len(e.Unhealthy) > 0 {
		t.refuse(RefusalMemberUnhealthy, "etcd", "members are unhealthy: "+strings.Join(e.Unhealthy, ", "),
			"wait until every member is healthy, then re-run")
	}
	if e.HashKVMismatch {
		t.refuse(RefusalHashKVMismatch, "etcd", "HashKV differs between members at a common revision: "+orDefault(e.HashKVDetail, "data diverged"),
			"find and replace the diverged member before migrating")
	}
}

// translateMembers pairs every etcd member with the Running Pod of the same name and its PVC
// data-<pod>, and checks that its persisted peer URL is the one the operator will compute.
func (t *translator) translateMembers() {
	if sub, ok := t.dataDirSubPath(); ok {
		t.out.DataDirSubPath = sub
	} else if t.in.StatefulSet != nil {
		t.refuse(RefusalDataDirLayout, "StatefulSet "+t.in.StatefulSet.Name+" --data-dir",
			fmt.Sprintf("--data-dir=%s is not one directory below the data volume's mount; adopted members could not find their data", t.flags["data-dir"]),
			"no in-place adoption is possible; back the cluster up and restore it into a new one")
	}
	e := t.in.Etcd
	if e == nil {
		return
	}
	pods := map[string]*corev1.Pod{}
	for i := range t.in.Pods {
		pods[t.in.Pods[i].Name] = &t.in.Pods[i]
	}
	pvcs := map[string]*corev1.PersistentVolumeClaim{}
	for i := range t.in.PVCs {
		pvcs[t.in.PVCs[i].Name] = &t.in.PVCs[i]
	}
	names := map[string]bool{}
	for _, m := range e.Members {
		names[m.Name] = true
		if mem, ok := t.member(m, pods, pvcs); ok {
			t.out.Members = append(t.out.Members, mem)
		}
	}
	for name := range pods {
		if !names[name] {
			t.refuse(RefusalMemberPodMismatch, "Pod "+name, "the Pod "+name+" has no etcd member of its name", "remove the stray Pod or let the member join, then re-run")
		}
	}
	sort.Slice(t.out.Members, func(i, j int) bool { return t.out.Members[i].Name < t.out.Members[j].Name })
	t.checkCount(len(e.Members))
}

func (t *translator) member(m EtcdMember, pods map[string]*corev1.Pod, pvcs map[string]*corev1.PersistentVolumeClaim) (Member, bool) {
	field := "member " + orDefault(m.Name, m.ID)
	if m.IsLearner {
		t.refuse(RefusalLearnerPresent, field, "member "+m.ID+" is a learner: the membership is mid-change", "let the change finish (or remove the learner), then re-run")
		return Member{}, false
	}
	pod := pods[m.Name]
	if m.Name == "" || pod == nil || pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
		t.refuse(RefusalMemberPodMismatch, field, "member "+m.ID+" has no Running Pod named "+orDefault(m.Name, "(unstarted)"),
			"bring the member's Pod back (or remove the member), then re-run")
		return Member{}, false
	}
	if t.emptyDir {
		return Member{}, false
	}
	pvc := pvcs[legacy.PVCName(pod.Name)]
	if pvc == nil {
		t.refuse(RefusalPVCMissing, "PersistentVolumeClaim "+legacy.PVCName(pod.Name), "the member's data PVC does not exist", "")
		return Member{}, false
	}
	if ref := foreignController(pvc, t.in.Cluster.Name); ref != "" {
		t.refuse(RefusalPVCForeignOwner, "PersistentVolumeClaim "+pvc.Name, "the PVC is controlled by "+ref+", not the legacy StatefulSet", "remove that ownerReference if the PVC belongs to this cluster, then re-run")
		return Member{}, false
	}
	want := t.peerURL(pod.Name)
	if len(m.PeerURLs) != 1 || m.PeerURLs[0] != want {
		t.refuse(RefusalPeerURLLayout, field, fmt.Sprintf("the member's peer URLs are %v; an adopted member advertises %s, which etcd must know it by", m.PeerURLs, want),
			"update the member's peer URL (etcdctl member update) to "+want+", then re-run")
		return Member{}, false
	}
	return Member{Name: pod.Name, ID: m.ID, PodUID: string(pod.UID), PVCName: pvc.Name, PeerURL: want}, true
}

// foreignController names the PVC's controller unless it is the legacy StatefulSet (or the
// legacy EtcdCluster); "" when it is one of those or there is none.
func foreignController(pvc *corev1.PersistentVolumeClaim, cluster string) string {
	for _, r := range pvc.OwnerReferences {
		if !ptr.Deref(r.Controller, false) {
			continue
		}
		if (r.Kind == "StatefulSet" && strings.HasPrefix(r.APIVersion, "apps/") && r.Name == legacy.StatefulSetName(cluster)) ||
			(r.Kind == legacy.KindEtcdCluster && r.APIVersion == legacy.GroupVersion.String() && r.Name == cluster) {
			return ""
		}
		return r.Kind + " " + r.Name
	}
	return ""
}

// checkCount sets spec.replicas to the live member count.
func (t *translator) checkCount(n int) {
	switch {
	case n == 0:
		t.refuse(RefusalNoMembers, "etcd", "etcd lists no members", "")
		return
	case n > maxMembers:
		t.refuse(RefusalTooManyMembers, "spec.replicas", fmt.Sprintf("the cluster has %d members; this operator runs at most %d", n, maxMembers),
			"scale the legacy cluster to 7 or fewer members, then re-run")
	}
	t.spec.Replicas = ptr.To(int32(min(n, maxMembers))) //nolint:gosec // G115: min bounds it by maxMembers, 7
	if want := t.in.Cluster.Replicas(); int(want) != n {
		t.warn(WarnReplicasDiffer, "spec.replicas",
			fmt.Sprintf("the legacy spec asks for %d members but %d run; spec.replicas is %d, the members that run", want, n, n),
			"change spec.replicas after the migration if you want another size")
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
