package legacyfixture

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

// statefulSet renders the legacy StatefulSet (docs/migration.md, "Legacy layout").
func statefulSet(o Options, c *legacy.EtcdCluster) *appsv1.StatefulSet {
	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: legacy.StatefulSetName(o.Name), Namespace: o.Namespace},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(o.Replicas),
			ServiceName:         legacy.HeadlessServiceName(c),
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: legacy.Selector(o.Name)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: legacy.Selector(o.Name)},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{container(o, c)},
					Volumes:    volumes(o, c),
				},
			},
		},
	}
	if !o.EmptyDir {
		vct := c.Spec.Storage.VolumeClaimTemplate
		sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: legacy.ClaimTemplateName},
			Spec:       *vct.Spec.DeepCopy(),
		}}
	}
	return sts
}

func container(o Options, c *legacy.EtcdCluster) corev1.Container {
	fieldEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(legacy.MetricsPort)}},
			PeriodSeconds: 5,
		}
	}
	return corev1.Container{
		Name:    legacy.ContainerName,
		Image:   o.Image,
		Command: []string{"etcd"},
		Args:    Args(o, c),
		Ports: []corev1.ContainerPort{
			{Name: "peer", ContainerPort: legacy.PeerPort},
			{Name: "client", ContainerPort: legacy.ClientPort},
		},
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: legacy.StateConfigMapName(o.Name)},
		}}},
		Env:            []corev1.EnvVar{fieldEnv(legacy.EnvPodName, "metadata.name"), fieldEnv(legacy.EnvPodNamespace, "metadata.namespace")},
		StartupProbe:   probe(legacy.StartupProbePath),
		ReadinessProbe: probe(legacy.ReadinessProbePath),
		LivenessProbe:  probe(legacy.LivenessProbePath),
		VolumeMounts:   volumeMounts(c),
	}
}

// Args is the legacy etcd command line of cluster c: identity and URLs, peer TLS (the peer
// listener is always HTTPS), server TLS, client certificate auth, the implicit compaction
// defaults, then spec.options and the implicit quota, sorted, so that an option given twice
// is read last by etcd.
func Args(o Options, c *legacy.EtcdCluster) []string {
	client := "http"
	if c.TLS().ServerSecret != "" {
		client = "https"
	}
	host := "$(" + legacy.EnvPodName + ")." + legacy.HeadlessServiceName(c) + ".$(" + legacy.EnvPodNamespace + ").svc"
	args := []string{
		"--name=$(" + legacy.EnvPodName + ")",
		fmt.Sprintf("--listen-metrics-urls=http://0.0.0.0:%d", legacy.MetricsPort),
		fmt.Sprintf("--listen-peer-urls=https://0.0.0.0:%d", legacy.PeerPort),
		fmt.Sprintf("--listen-client-urls=%s://0.0.0.0:%d", client, legacy.ClientPort),
		fmt.Sprintf("--initial-advertise-peer-urls=https://%s:%d", host, legacy.PeerPort),
		"--data-dir=" + legacy.DataDir,
		fmt.Sprintf("--advertise-client-urls=%s://%s:%d", client, host, legacy.ClientPort),
	}
	args = append(args, tlsArgs(c.TLS())...)
	args = append(args,
		"--"+legacy.OptionAutoCompactionRetention+"="+legacy.DefaultAutoCompactionRetention,
		"--"+legacy.OptionSnapshotCount+"="+legacy.DefaultSnapshotCount)
	return append(args, optionArgs(o, c)...)
}

func tlsArgs(t legacy.TLSSpec) []string {
	var out []string
	if t.PeerSecret == "" {
		out = append(out, "--peer-auto-tls")
	} else {
		out = append(out,
			"--peer-trusted-ca-file="+legacy.PeerCAMountPath+"/ca.crt",
			"--peer-cert-file="+legacy.PeerCertMountPath+"/tls.crt",
			"--peer-key-file="+legacy.PeerCertMountPath+"/tls.key",
			"--peer-client-cert-auth")
	}
	if t.ServerSecret != "" {
		out = append(out, "--cert-file="+legacy.ServerCertMountPath+"/tls.crt", "--key-file="+legacy.ServerCertMountPath+"/tls.key")
	}
	if t.ClientSecret != "" {
		out = append(out, "--trusted-ca-file="+legacy.ClientCAMountPath+"/ca.crt", "--client-cert-auth")
	}
	return out
}

// optionArgs renders spec.options plus the implicit quota (95 % of the volume), sorted.
func optionArgs(o Options, c *legacy.EtcdCluster) []string {
	opts := maps.Clone(c.Spec.Options)
	if opts == nil {
		opts = map[string]string{}
	}
	if opts[legacy.OptionQuotaBackendBytes] == "" {
		size := o.StorageSize
		if q := legacy.DefaultQuotaBackendBytes(size); q > 0 {
			opts[legacy.OptionQuotaBackendBytes] = strconv.FormatInt(q, 10)
		}
	}
	out := make([]string, 0, len(opts))
	for k, v := range opts {
		if v == "" {
			out = append(out, "--"+k)
			continue
		}
		out = append(out, "--"+k+"="+v)
	}
	slices.Sort(out)
	return out
}

func volumes(o Options, c *legacy.EtcdCluster) []corev1.Volume {
	data := corev1.Volume{Name: legacy.DataVolumeName}
	if o.EmptyDir {
		data.EmptyDir = c.Spec.Storage.EmptyDir.DeepCopy()
	} else {
		// The StatefulSet controller replaces this claim with data-<pod> in each Pod.
		data.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: legacy.ClaimTemplateName}
	}
	out := []corev1.Volume{data}
	secret := func(name, secretName string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secretName}}}
	}
	t := c.TLS()
	if t.PeerSecret != "" {
		out = append(out, secret("peer-trusted-ca-certificate", t.PeerTrustedCASecret), secret("peer-certificate", t.PeerSecret))
	}
	if t.ServerSecret != "" {
		out = append(out, secret("server-certificate", t.ServerSecret))
	}
	if t.ClientSecret != "" {
		out = append(out, secret("client-trusted-ca-certificate", t.ClientTrustedCASecret))
	}
	return out
}

func volumeMounts(c *legacy.EtcdCluster) []corev1.VolumeMount {
	out := []corev1.VolumeMount{{Name: legacy.DataVolumeName, MountPath: legacy.DataMountPath}}
	t := c.TLS()
	if t.PeerSecret != "" {
		out = append(out,
			corev1.VolumeMount{Name: "peer-trusted-ca-certificate", ReadOnly: true, MountPath: legacy.PeerCAMountPath},
			corev1.VolumeMount{Name: "peer-certificate", ReadOnly: true, MountPath: legacy.PeerCertMountPath})
	}
	if t.ServerSecret != "" {
		out = append(out, corev1.VolumeMount{Name: "server-certificate", ReadOnly: true, MountPath: legacy.ServerCertMountPath})
	}
	if t.ClientSecret != "" {
		out = append(out, corev1.VolumeMount{Name: "client-trusted-ca-certificate", ReadOnly: true, MountPath: legacy.ClientCAMountPath})
	}
	return out
}
