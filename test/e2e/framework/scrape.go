package framework

import (
	"net"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/test/utils/promserver"
)

// PodScrapeTargets returns the file_sd target groups a PodMonitor (or a ServiceMonitor's
// endpoints) would give Prometheus for pods: one group per Pod that has an IP, is neither
// Succeeded nor Failed and declares a container port named port, at <Pod IP>:<port>, labelled
// namespace and pod as prometheus-operator labels them, plus each target label of podLabels
// copied from the Pod label it names (the chart's PodMonitor copies
// etcd-operator.cozystack.io/cluster to cluster; docs/monitoring.md, "Scraping"). Groups are
// ordered by Pod name, so that an unchanged set of Pods gives an equal answer.
func PodScrapeTargets(pods []corev1.Pod, port string, podLabels map[string]string) []promserver.TargetGroup {
	var out []promserver.TargetGroup
	for i := range pods {
		p := &pods[i]
		if p.Status.PodIP == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		number := namedPort(p, port)
		if number == 0 {
			continue
		}
		labels := map[string]string{"namespace": p.Namespace, "pod": p.Name}
		for target, from := range podLabels {
			if v, ok := p.Labels[from]; ok {
				labels[target] = v
			}
		}
		out = append(out, promserver.TargetGroup{
			Targets: []string{net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(number)))},
			Labels:  labels,
		})
	}
	slices.SortFunc(out, func(a, b promserver.TargetGroup) int {
		if a.Labels["namespace"] != b.Labels["namespace"] {
			return compareStrings(a.Labels["namespace"], b.Labels["namespace"])
		}
		return compareStrings(a.Labels["pod"], b.Labels["pod"])
	})
	return out
}

func namedPort(p *corev1.Pod, name string) int32 {
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == name {
				return cp.ContainerPort
			}
		}
	}
	return 0
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
