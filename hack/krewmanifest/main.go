// Command krewmanifest writes the krew plugin manifest of kubectl-etcd (dist/krew/etcd.yaml)
// from the release archives that make release built: one platform per archive, its URI under
// -uri-base and its sha256, all at the version the binaries carry (docs/kubectl-etcd/
// operator-commands.md, "Install").
//
//	go run ./hack/krewmanifest -version v0.3.0 -uri-base https://…/v0.3.0 -out dist/krew/etcd.yaml dist/kubectl-etcd_*
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	var o Options
	out := flag.String("out", "dist/krew/etcd.yaml", "where to write the manifest")
	flag.StringVar(&o.Version, "version", "", "the plugin's version, as the binaries carry it (git describe)")
	flag.StringVar(&o.URIBase, "uri-base", "", "URL the archives are downloaded from; each archive's URI is <uri-base>/<archive name>")
	flag.StringVar(&o.Homepage, "homepage", DefaultHomepage, "the plugin's homepage")
	flag.Parse()
	if o.Version == "" || o.URIBase == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: krewmanifest -version V -uri-base URL [-out FILE] ARCHIVE...")
		os.Exit(2)
	}
	b, err := Generate(o, flag.Args())
	if err == nil {
		err = os.MkdirAll(filepath.Dir(*out), 0o755)
	}
	if err == nil {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hack/krewmanifest:", err)
		os.Exit(1)
	}
}
