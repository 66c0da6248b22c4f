package podconn

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

// Flags of etcd's command line that the connection depends on
// (https://etcd.io/docs/v3.6/op-guide/configuration/).
const (
	FlagListenClientURLs    = "listen-client-urls"
	FlagAdvertiseClientURLs = "advertise-client-urls"
	FlagCertFile            = "cert-file"
	FlagKeyFile             = "key-file"
	FlagTrustedCAFile       = "trusted-ca-file"
	FlagClientCertAuth      = "client-cert-auth"
	FlagQuotaBackendBytes   = "quota-backend-bytes"
)

// defaultListenClientURL is etcd's own default for --listen-client-urls.
const defaultListenClientURL = "http://localhost:2379"

// CAKey is the key of the CA bundle in a certificate Secret, as cert-manager and this operator
// write it.
const CAKey = "ca.crt"

// ErrNoEtcd means no container of the Pod runs etcd.
var ErrNoEtcd = errors.New("no container of the Pod runs etcd")

// SecretFile is one file of a Secret volume: the Secret (in the Pod's namespace) and its key.
type SecretFile struct {
	Secret string `json:"secret"`
	Key    string `json:"key"`
}

// Target is how to reach the etcd of one Pod.
type Target struct {
	// Namespace and Pod name the Pod; Container is its etcd container.
	Namespace, Pod, Container string
	// Member is etcd's --name, with $(VAR) references expanded; empty when unset.
	Member string
	// Scheme is http or https; Port is the client listener's port inside the Pod, which the
	// port-forward connects to.
	Scheme string
	Port   int32
	// ServerName is the DNS name the server certificate is verified against: the host of the
	// first advertised client URL, or the Pod's hostname.subdomain.namespace.svc.
	ServerName string
	// ServerCert is the Secret file behind --cert-file; nil when the file is not mounted from a
	// Secret. Its Secret's ca.crt, when present, is the CA the server is verified with.
	ServerCert *SecretFile
	// ClientCertAuth is --client-cert-auth: etcd wants a client certificate signed by ClientCA.
	ClientCertAuth bool
	// ClientCA is the Secret file behind --trusted-ca-file; nil without it.
	ClientCA *SecretFile
	// QuotaBackendBytes is --quota-backend-bytes; 0 when unset (etcd's default applies).
	QuotaBackendBytes int64
}

// TLS reports whether the client listener serves TLS.
func (t Target) TLS() bool { return t.Scheme == "https" }

// Derive reads the connection to p's etcd from its etcd container's command line and volumes.
func Derive(p *corev1.Pod) (Target, error) {
	c, args, err := etcdContainer(p)
	if err != nil {
		return Target{}, err
	}
	flags := effectiveFlags(c, args, p)
	t := Target{Namespace: p.Namespace, Pod: p.Name, Container: c.Name, Member: flags["name"]}
	if t.Scheme, t.Port, err = clientListener(flags); err != nil {
		return Target{}, err
	}
	t.ServerName = serverName(flags, p)
	t.ClientCertAuth = flags[FlagClientCertAuth] == "true"
	if q, err := strconv.ParseInt(flags[FlagQuotaBackendBytes], 10, 64); err == nil && q > 0 {
		t.QuotaBackendBytes = q
	}
	if f := flags[FlagCertFile]; f != "" && t.TLS() {
		if t.ServerCert, err = secretFile(p, c, f); err != nil {
			return Target{}, fmt.Errorf("--%s: %w", FlagCertFile, err)
		}
	}
	if f := flags[FlagTrustedCAFile]; f != "" && t.ClientCertAuth {
		if t.ClientCA, err = secretFile(p, c, f); err != nil {
			return Target{}, fmt.Errorf("--%s: %w", FlagTrustedCAFile, err)
		}
	}
	if t.TLS() && t.ServerName == "" {
		return Target{}, fmt.Errorf("pod %s serves TLS but advertises no client URL with a DNS name and has no hostname and subdomain: there is no name to verify its certificate against", p.Name)
	}
	return t, nil
}

// etcdContainer is the first container whose command line runs a binary named etcd, and the
// arguments that follow that binary: this operator wraps etcd in etcd-guard (`etcd-guard run
// … -- /usr/local/bin/etcd`, docs/design/pod-template.md) and passes etcd's flags as args; the
// legacy operator runs `etcd` with its flags as args.
func etcdContainer(p *corev1.Pod) (*corev1.Container, []string, error) {
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		line := append(append([]string{}, c.Command...), c.Args...)
		for j, a := range line {
			if path.Base(a) == "etcd" {
				return c, line[j+1:], nil
			}
		}
	}
	return nil, nil, fmt.Errorf("pod %s: %w (looked for a command or argument naming a binary etcd)", p.Name, ErrNoEtcd)
}

// effectiveFlags are etcd's flags as etcd reads them: the command line, else the container's
// literal ETCD_<FLAG> variables (etcd reads those when the flag is not given), with Kubernetes'
// $(VAR) references expanded from the container's literal and Pod-field variables.
func effectiveFlags(c *corev1.Container, args []string, p *corev1.Pod) map[string]string {
	env := envOf(c, p)
	flags := legacy.ParseFlags(args)
	for k, v := range env {
		name, ok := strings.CutPrefix(k, "ETCD_")
		if !ok {
			continue
		}
		flag := strings.ReplaceAll(strings.ToLower(name), "_", "-")
		if _, set := flags[flag]; !set {
			flags[flag] = v
		}
	}
	for k, v := range flags {
		flags[k] = expand(v, env)
	}
	return flags
}

// envOf are the variables whose values the Pod alone says: literal values and the Pod's name and
// namespace by field reference. envFrom (a ConfigMap) is not read: the legacy layout keeps only
// bootstrap variables there (docs/migration.md, "Legacy layout").
func envOf(c *corev1.Container, p *corev1.Pod) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = p.Name
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = p.Namespace
		}
	}
	return env
}

// expand replaces $(VAR) with VAR's value where known, as the kubelet does for command lines.
func expand(s string, env map[string]string) string {
	for k, v := range env {
		s = strings.ReplaceAll(s, "$("+k+")", v)
	}
	return s
}

// clientListener is the scheme and port of the first --listen-client-urls URL: the port-forward
// connects to the Pod's loopback, which every listener (0.0.0.0, the Pod IP, localhost) serves.
func clientListener(flags map[string]string) (string, int32, error) {
	raw := flags[FlagListenClientURLs]
	if raw == "" {
		raw = defaultListenClientURL
	}
	first, _, _ := strings.Cut(raw, ",")
	u, err := url.Parse(strings.TrimSpace(first))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", 0, fmt.Errorf("--%s %q: not an http or https URL", FlagListenClientURLs, raw)
	}
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil || port == 0 {
		return "", 0, fmt.Errorf("--%s %q: no port", FlagListenClientURLs, raw)
	}
	return u.Scheme, int32(port), nil
}

// serverName is the host of the first advertised client URL when it is a DNS name, else the
// name the Pod's hostname and subdomain give it.
func serverName(flags map[string]string, p *corev1.Pod) string {
	for raw := range strings.SplitSeq(flags[FlagAdvertiseClientURLs], ",") {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || u.Hostname() == "" || strings.Contains(u.Hostname(), "$(") {
			continue
		}
		if net.ParseIP(u.Hostname()) == nil && u.Hostname() != "localhost" {
			return u.Hostname()
		}
	}
	if p.Spec.Hostname != "" && p.Spec.Subdomain != "" {
		return p.Spec.Hostname + "." + p.Spec.Subdomain + "." + p.Namespace + ".svc"
	}
	return ""
}
