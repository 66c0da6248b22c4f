package phase

import (
	"context"
	"errors"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
	"github.com/etcd-operator/etcd-operator/internal/migrate/plan"
	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
)

// Inspection is one legacy cluster as found: the translation's input, which optional legacy
// objects exist, and each Pod's restart count (verify compares them after the adoption).
type Inspection struct {
	Input    translate.Input
	Present  plan.Present
	Restarts map[string]int32
}

// Inspect reads one legacy cluster's objects and, through d, its etcd. It fails only when the
// API server cannot be read; an etcd that cannot be inspected is recorded in
// Input.InspectionError, which the translation turns into a refusal of this cluster alone.
func Inspect(ctx context.Context, r client.Reader, d Dialer, c *legacy.EtcdCluster, cfg translate.Config) (*Inspection, error) {
	in := translate.Input{Cluster: c, Config: cfg, Secrets: map[string]translate.SecretSummary{}}
	ins := &Inspection{Restarts: map[string]int32{}}
	if err := readObjects(ctx, r, &in); err != nil {
		return nil, err
	}
	for _, p := range in.Pods {
		ins.Restarts[p.Name] = restarts(&p)
	}
	ins.Present = plan.Present{StateConfigMap: in.StateConfigMap != nil, PDB: in.PDB != nil, ClientService: in.ClientService != nil}
	facts, err := inspectEtcd(ctx, r, d, c, in.Pods)
	if err != nil {
		in.InspectionError = err.Error()
	} else {
		in.Etcd = facts
	}
	ins.Input = in
	return ins, nil
}

// restarts sums the restart counts of a Pod's containers.
func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

// readObjects fills the objects of the legacy layout (docs/migration.md, "Legacy layout").
func readObjects(ctx context.Context, r client.Reader, in *translate.Input) error {
	c := in.Cluster
	ns := c.Namespace
	var err error
	if in.StatefulSet, err = getOptional(ctx, r, ns, legacy.StatefulSetName(c.Name), &appsv1.StatefulSet{}); err != nil {
		return err
	}
	if in.HeadlessService, err = getOptional(ctx, r, ns, legacy.HeadlessServiceName(c), &corev1.Service{}); err != nil {
		return err
	}
	if in.ClientService, err = getOptional(ctx, r, ns, legacy.ClientServiceName(c), &corev1.Service{}); err != nil {
		return err
	}
	if in.StateConfigMap, err = getOptional(ctx, r, ns, legacy.StateConfigMapName(c.Name), &corev1.ConfigMap{}); err != nil {
		return err
	}
	if in.PDB, err = getOptional(ctx, r, ns, legacy.PDBName(c.Name), &policyv1.PodDisruptionBudget{}); err != nil {
		return err
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(legacy.Selector(c.Name))); err != nil {
		return fmt.Errorf("listing the Pods of %s/%s: %w", ns, c.Name, err)
	}
	in.Pods = pods.Items
	sort.Slice(in.Pods, func(i, j int) bool { return in.Pods[i].Name < in.Pods[j].Name })
	for _, p := range in.Pods {
		pvc, err := getOptional(ctx, r, ns, legacy.PVCName(p.Name), &corev1.PersistentVolumeClaim{})
		if err != nil {
			return err
		}
		if pvc != nil {
			in.PVCs = append(in.PVCs, *pvc)
		}
	}
	return readSecrets(ctx, r, in)
}

func readSecrets(ctx context.Context, r client.Reader, in *translate.Input) error {
	t := in.Cluster.TLS()
	for _, name := range []string{t.PeerTrustedCASecret, t.PeerSecret, t.ServerTrustedCASecret, t.ServerSecret, t.ClientTrustedCASecret, t.ClientSecret} {
		if name == "" {
			continue
		}
		s, err := getOptional(ctx, r, in.Cluster.Namespace, name, &corev1.Secret{})
		if err != nil {
			return err
		}
		if s != nil {
			in.Secrets[name] = translate.Summarize(s)
		}
	}
	return nil
}

// getOptional reads an object; nil when it does not exist.
func getOptional[T client.Object](ctx context.Context, r client.Reader, ns, name string, obj T) (T, error) {
	var zero T
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return zero, nil
		}
		return zero, fmt.Errorf("reading %T %s/%s: %w", obj, ns, name, err)
	}
	return obj, nil
}

// inspectEtcd dials the cluster with its legacy identity and reads the facts.
func inspectEtcd(ctx context.Context, r client.Reader, d Dialer, c *legacy.EtcdCluster, pods []corev1.Pod) (*translate.EtcdFacts, error) {
	if len(pods) == 0 {
		return nil, errors.New("no Pod with the legacy labels exists")
	}
	t, err := LegacyTarget(ctx, r, c, pods)
	if err != nil {
		return nil, err
	}
	s, err := d.Dial(ctx, t)
	if err != nil {
		return nil, err
	}
	defer func() { _ = s.Close() }()
	return ReadFacts(ctx, s)
}
