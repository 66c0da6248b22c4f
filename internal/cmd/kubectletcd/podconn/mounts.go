package podconn

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// secretFile maps file, a path inside container c, to the Secret key it is mounted from: the
// volume mount with the longest path containing file, then the mount's subPath and the volume's
// items, as the kubelet lays out a Secret volume (a key becomes a file named after it unless
// items rename it). Secret volumes and the Secret sources of projected volumes are followed.
func secretFile(p *corev1.Pod, c *corev1.Container, file string) (*SecretFile, error) {
	file = path.Clean(file)
	var best *corev1.VolumeMount
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		if within(file, m.MountPath) && (best == nil || len(m.MountPath) > len(best.MountPath)) {
			best = m
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%s is on no volume of container %s", file, c.Name)
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(file, path.Clean(best.MountPath)), "/")
	if best.SubPath != "" {
		rel = path.Join(best.SubPath, rel)
	}
	for i := range p.Spec.Volumes {
		if v := &p.Spec.Volumes[i]; v.Name == best.Name {
			return volumeFile(v, rel)
		}
	}
	return nil, fmt.Errorf("%s is on volume %s, which the Pod does not define", file, best.Name)
}

// within reports whether file is dir or below it.
func within(file, dir string) bool {
	dir = path.Clean(dir)
	return file == dir || strings.HasPrefix(file, strings.TrimSuffix(dir, "/")+"/")
}

func volumeFile(v *corev1.Volume, rel string) (*SecretFile, error) {
	switch {
	case v.Secret != nil:
		if key, ok := keyOf(v.Secret.Items, rel); ok {
			return &SecretFile{Secret: v.Secret.SecretName, Key: key}, nil
		}
	case v.Projected != nil:
		for _, s := range v.Projected.Sources {
			if s.Secret == nil {
				continue
			}
			if key, ok := keyOf(s.Secret.Items, rel); ok {
				return &SecretFile{Secret: s.Secret.Name, Key: key}, nil
			}
		}
	default:
		return nil, fmt.Errorf("volume %s is not a Secret volume, so the plugin cannot read %s", v.Name, rel)
	}
	return nil, fmt.Errorf("volume %s maps no Secret key to %s", v.Name, rel)
}

// keyOf is the key that becomes file rel: the item whose path is rel, or, without items, rel
// itself when it names a file directly under the volume. With items, only the listed keys exist.
func keyOf(items []corev1.KeyToPath, rel string) (string, bool) {
	if len(items) == 0 {
		return rel, rel != "" && !strings.Contains(rel, "/")
	}
	for _, it := range items {
		if path.Clean(it.Path) == rel {
			return it.Key, true
		}
	}
	return "", false
}
