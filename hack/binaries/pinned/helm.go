package pinned

import (
	"context"
	"strings"
)

// HelmModule is Helm's module at its current major version; HELM_VERSION in hack/versions.env
// pins its release (docs/helm.md, "How the chart is checked").
const HelmModule = "helm.sh/helm/v4"

// HelmBinary is the name of the Helm CLI in the cache.
const HelmBinary = "helm"

func (b *Builder) helmSet() binarySet {
	v := "v" + b.versions.Helm
	internal := HelmModule + "/internal/version"
	// The same -X settings as upstream's Makefile for a tagged build: without them `helm version`
	// reports the bare minor (v4.3) and "unreleased" metadata.
	ldflags := []string{
		"-X " + internal + ".version=" + v,
		"-X " + internal + ".metadata=",
		"-X " + internal + ".gitTreeState=clean",
	}
	m := Module{Path: HelmModule, Version: v}
	return binarySet{
		name:     "helm-" + v,
		packages: map[string]string{HelmBinary: HelmModule + "/cmd/helm"},
		ldflags:  strings.Join(ldflags, " "),
		goMod: func(context.Context) ([]byte, error) {
			return plainToolsGoMod(toolsGoVersion, m), nil
		},
	}
}

// Helm builds (or reuses) the helm CLI at the pinned release and returns its folder.
func (b *Builder) Helm(ctx context.Context) (string, error) {
	return b.ensure(ctx, b.helmSet(), []string{HelmBinary})
}
