package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// APIGroup is the project's API group. The framework reads its objects as unstructured data
// found through discovery, so it depends neither on api/ types nor on which kinds exist yet.
const APIGroup = "etcd-operator.cozystack.io"

// maxLogBytes caps each dumped container log; the tail is what explains a failure.
const maxLogBytes = 4 << 20

// DumpNamespace writes into dir: events (events.yaml and a readable events.txt), Pods
// (pods.yaml) with every container's current and previous logs (logs/<pod>/<container>.log),
// Services, PVCs, PDBs and Jobs, and, when withProjectKinds, every object of the project's API
// group (<resource>.yaml). It keeps going after an error and returns them all.
func (s *Suite) DumpNamespace(ctx context.Context, namespace, dir string, withProjectKinds bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	core := s.Kube.CoreV1()

	events, err := core.Events(namespace).List(ctx, metav1.ListOptions{})
	if err == nil {
		sort.SliceStable(events.Items, func(i, j int) bool { return eventTime(&events.Items[i]).Before(eventTime(&events.Items[j])) })
		keep(writeYAML(filepath.Join(dir, "events.yaml"), events))
		keep(writeEventsText(filepath.Join(dir, "events.txt"), events.Items))
	}
	keep(err)

	pods, err := core.Pods(namespace).List(ctx, metav1.ListOptions{})
	if err == nil {
		keep(writeYAML(filepath.Join(dir, "pods.yaml"), pods))
		for i := range pods.Items {
			keep(s.dumpPodLogs(ctx, &pods.Items[i], filepath.Join(dir, "logs", pods.Items[i].Name)))
		}
	}
	keep(err)

	if l, err := core.Services(namespace).List(ctx, metav1.ListOptions{}); err == nil {
		keep(writeYAML(filepath.Join(dir, "services.yaml"), l))
	} else {
		keep(err)
	}
	if l, err := core.PersistentVolumeClaims(namespace).List(ctx, metav1.ListOptions{}); err == nil {
		keep(writeYAML(filepath.Join(dir, "persistentvolumeclaims.yaml"), l))
	} else {
		keep(err)
	}
	if l, err := s.Kube.PolicyV1().PodDisruptionBudgets(namespace).List(ctx, metav1.ListOptions{}); err == nil {
		keep(writeYAML(filepath.Join(dir, "poddisruptionbudgets.yaml"), l))
	} else {
		keep(err)
	}
	if l, err := s.Kube.BatchV1().Jobs(namespace).List(ctx, metav1.ListOptions{}); err == nil {
		keep(writeYAML(filepath.Join(dir, "jobs.yaml"), l))
	} else {
		keep(err)
	}
	if withProjectKinds {
		keep(s.dumpProjectKinds(ctx, namespace, dir))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("dumping namespace %s: %w", namespace, err)
	}
	return nil
}

// dumpProjectKinds writes every namespaced resource of APIGroup that the cluster serves.
func (s *Suite) dumpProjectKinds(ctx context.Context, namespace, dir string) error {
	lists, err := s.Discovery.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return fmt.Errorf("discovering %s resources: %w", APIGroup, err)
	}
	var errs []error
	for _, list := range lists {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil || gv.Group != APIGroup {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue // subresources, or kinds that cannot be listed
			}
			objs, lerr := s.Dynamic.Resource(gv.WithResource(r.Name)).Namespace(namespace).List(ctx, metav1.ListOptions{})
			if lerr != nil {
				errs = append(errs, fmt.Errorf("listing %s: %w", r.Name, lerr))
				continue
			}
			errs = append(errs, writeYAML(filepath.Join(dir, r.Name+".yaml"), objs))
		}
	}
	return errors.Join(errs...)
}

// dumpPodLogs writes the current and, after a restart, the previous log of every container.
func (s *Suite) dumpPodLogs(ctx context.Context, pod *corev1.Pod, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	restarts := map[string]int32{}
	for _, st := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		restarts[st.Name] = st.RestartCount
	}
	var containers []string
	for _, c := range pod.Spec.InitContainers {
		containers = append(containers, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		containers = append(containers, c.Name)
	}
	var errs []error
	for _, c := range containers {
		errs = append(errs, s.writeLog(ctx, pod, c, false, filepath.Join(dir, c+".log")))
		if restarts[c] > 0 {
			errs = append(errs, s.writeLog(ctx, pod, c, true, filepath.Join(dir, c+".previous.log")))
		}
	}
	return errors.Join(errs...)
}

func (s *Suite) writeLog(ctx context.Context, pod *corev1.Pod, container string, previous bool, path string) error {
	limit := int64(maxLogBytes)
	stream, err := s.Kube.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{
		Container: container, Previous: previous, LimitBytes: &limit, Timestamps: true,
	}).Stream(ctx)
	if err != nil {
		// A container that never started has no log; say so in the file rather than failing
		// the dump.
		return os.WriteFile(path, []byte(fmt.Sprintf("(no log: %v)\n", err)), 0o644)
	}
	defer func() { _ = stream.Close() }()
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, stream)
	if err == nil && n == 0 {
		// An empty file reads like a failed dump; say that the log itself was empty.
		_, err = out.WriteString("(empty log)\n")
	}
	return errors.Join(err, out.Close())
}

func (s *Suite) dumpNodes(ctx context.Context, dir string) error {
	nodes, err := s.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	return writeYAML(filepath.Join(dir, "nodes.yaml"), nodes)
}

func writeYAML(path string, obj any) error {
	b, err := yaml.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func writeEventsText(path string, events []corev1.Event) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	// tabwriter buffers until Flush, which reports any write error; the Fprint results carry
	// nothing more.
	w := tabwriter.NewWriter(f, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "TIME\tTYPE\tREASON\tOBJECT\tCOUNT\tMESSAGE")
	for i := range events {
		e := &events[i]
		_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s/%s\t%d\t%s\n", eventTime(e).UTC().Format(time.RFC3339), e.Type, e.Reason,
			e.InvolvedObject.Kind, e.InvolvedObject.Name, max(e.Count, 1), strings.ReplaceAll(e.Message, "\n", " "))
	}
	return errors.Join(w.Flush(), f.Close())
}

// eventTime is the latest time an event carries; events.k8s.io/v1 writers fill only EventTime.
func eventTime(e *corev1.Event) time.Time {
	for _, t := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time, e.FirstTimestamp.Time, e.CreationTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}
