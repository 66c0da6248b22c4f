package translate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/desired"
)

// minVersion is the oldest etcd this project runs (docs/api.md, spec.version).
var minVersion = [3]int{3, 5, 0}

// translateVersion takes spec.version from the live image tag, or --version, and warns when
// the image repository differs from the operator's: the first roll switches it.
func (t *translator) translateVersion() {
	image := ""
	if sts := t.in.StatefulSet; sts != nil {
		if c := etcdContainer(sts.Spec.Template.Spec.Containers); c != nil {
			image = c.Image
		}
	}
	repo, tag := SplitImage(image)
	source, raw := "image tag of "+image, strings.TrimPrefix(tag, "v")
	if t.in.Config.Version != "" {
		source, raw = "--version", strings.TrimPrefix(t.in.Config.Version, "v")
	}
	v, ok := parseVersion(raw)
	switch {
	case !ok && t.in.StatefulSet != nil:
		t.refuse(RefusalVersionUnparsable, "StatefulSet "+t.in.StatefulSet.Name+" container etcd image",
			fmt.Sprintf("cannot read an etcd version X.Y.Z from the %s", source),
			versionFix(t.in))
		return
	case !ok:
		return
	case less(v, minVersion):
		t.refuse(RefusalVersionTooOld, "spec.version",
			fmt.Sprintf("etcd %s is older than 3.5.0, the oldest version this operator runs", raw),
			"upgrade the legacy cluster to etcd 3.5 first (through its podTemplate image), then re-run")
	}
	t.spec.Version = fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2])
	// Adoption keeps the version the members run: a spec.version that differs would make the
	// operator's first pass roll every adopted member to it, a downgrade when the tag is older
	// than what runs, during what is meant to be a no-restart hand-over.
	if e := t.in.Etcd; e != nil && e.Version != "" && strings.TrimPrefix(e.Version, "v") != t.spec.Version {
		t.refuse(RefusalVersionMismatch, "spec.version",
			fmt.Sprintf("members report etcd %s but the %s says %s; adopting would roll every member to %s", e.Version, source, t.spec.Version, t.spec.Version),
			"pass --version "+strings.TrimPrefix(e.Version, "v")+" (the running version); change the version after the adoption, through the EtcdCluster")
	}
	want := t.in.Config.ImageRepository
	if want == "" {
		want = desired.DefaultImageRepository
	}
	if repo != "" && repo != want {
		t.warn(WarnImageRepository, "spec.podTemplate.spec.containers[etcd].image",
			fmt.Sprintf("members run %s; the operator runs %s, so the first roll of each member switches its image repository", image, desired.Image(want, t.spec.Version)),
			"start the operator with --etcd-image-repository="+repo+" to keep the repository")
	}
}

// SplitImage splits an image reference into repository and tag; a digest is dropped, and the
// tag is empty when there is none. The tag's colon is the last one after the last slash, so
// that a registry port is not taken for a tag.
func SplitImage(image string) (repo, tag string) {
	image, _, _ = strings.Cut(image, "@")
	slash := strings.LastIndex(image, "/")
	if colon := strings.LastIndex(image, ":"); colon > slash {
		return image[:colon], image[colon+1:]
	}
	return image, ""
}

// parseVersion reads exactly MAJOR.MINOR.PATCH: pre-release or build suffixes (as in
// registry.k8s.io/etcd:3.5.12-0) are not guessed at.
func parseVersion(s string) ([3]int, bool) {
	var v [3]int
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || p[0] == '+' || p[0] == '-' {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// versionFix tells how to name the version of a cluster whose image tag does not say it: the
// running version when etcd reported one, and that --version applies to every cluster of a run,
// so a namespace whose clusters run different versions takes one run per version
// (docs/migration.md, "Flags").
func versionFix(in Input) string {
	v := "X.Y.Z"
	if in.Etcd != nil && in.Etcd.Version != "" {
		v = in.Etcd.Version
	}
	return fmt.Sprintf("re-run with --version %s --cluster %s: --version applies to every cluster of the run", v, in.Cluster.Name)
}
