package legacyfixture

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The legacy controller's Deployment, as its release manifests name it; it is etcd-migrate's
// --legacy-controller default.
const (
	ControllerNamespace = "etcd-operator-system"
	ControllerName      = "etcd-operator-controller-manager"
)

// ControllerDeployment is a stand-in for the legacy controller: a Deployment under the legacy
// name and labels whose Pods run etcd's image doing nothing harmful (an etcd listening on
// loopback only), so that the migration gate has something to find running, scaled down or
// absent. image is an etcd image the nodes have.
func ControllerDeployment(image string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"control-plane": "controller-manager", "app.kubernetes.io/name": "etcd-operator"}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: ControllerName, Namespace: ControllerNamespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:    "manager",
						Image:   image,
						Command: []string{"/usr/local/bin/etcd"},
						Args: []string{
							"--data-dir=/tmp/standin",
							"--listen-client-urls=http://127.0.0.1:12379", "--advertise-client-urls=http://127.0.0.1:12379",
							"--listen-peer-urls=http://127.0.0.1:12380", "--initial-advertise-peer-urls=http://127.0.0.1:12380",
							"--initial-cluster=default=http://127.0.0.1:12380",
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
					}},
					Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
}
