package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Control-plane component names (pid and log files).
const (
	etcdName          = "etcd"
	apiServerName     = "kube-apiserver"
	controllerMgrName = "kube-controller-manager"
	schedulerName     = "kube-scheduler"
	kubeProxyName     = "kube-proxy"
	coreDNSName       = "coredns"
	resizerName       = "local-resizer"
)

func (c *Cluster) kube(binary string) string { return filepath.Join(c.kubeDir, binary) }

func (c *Cluster) etcdProcess() process {
	url := fmt.Sprintf("http://%s:%d", ControlPlaneIP, etcdClientPort)
	peer := fmt.Sprintf("http://%s:%d", ControlPlaneIP, etcdPeerPort)
	return process{
		name: etcdName,
		bin:  filepath.Join(c.apiEtcdDir, "etcd"),
		args: []string{
			"--name=control-plane",
			"--data-dir=" + c.layout.etcdData(),
			"--listen-client-urls=" + url,
			"--advertise-client-urls=" + url,
			"--listen-peer-urls=" + peer,
			"--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=control-plane=" + peer,
			// A throwaway test cluster: durability across power loss buys nothing here,
			// and fsync latency on a shared disk slows every API write.
			"--unsafe-no-fsync",
		},
	}
}

func (c *Cluster) apiServerProcess() process {
	pki := func(f string) string { return filepath.Join(c.layout.pki(), f) }
	return process{
		name: apiServerName,
		bin:  c.kube("kube-apiserver"),
		args: []string{
			fmt.Sprintf("--etcd-servers=http://%s:%d", ControlPlaneIP, etcdClientPort),
			"--bind-address=" + ControlPlaneIP,
			"--advertise-address=" + ControlPlaneIP,
			fmt.Sprintf("--secure-port=%d", APIServerPort),
			"--service-cluster-ip-range=" + ServiceCIDR,
			"--client-ca-file=" + pki("ca.crt"),
			"--tls-cert-file=" + pki("apiserver.crt"),
			"--tls-private-key-file=" + pki("apiserver.key"),
			"--kubelet-client-certificate=" + pki("apiserver-kubelet-client.crt"),
			"--kubelet-client-key=" + pki("apiserver-kubelet-client.key"),
			"--kubelet-preferred-address-types=InternalIP",
			"--service-account-key-file=" + pki("sa.pub"),
			"--service-account-signing-key-file=" + pki("sa.key"),
			"--service-account-issuer=https://kubernetes.default.svc." + DNSDomain,
			"--authorization-mode=Node,RBAC",
			// OwnerReferencesPermissionEnforcement, so that the operator's RBAC is tested as
			// API servers that enforce it would apply it: an ownerReference with
			// blockOwnerDeletion needs update on the owner's finalizers.
			"--enable-admission-plugins=NodeRestriction,OwnerReferencesPermissionEnforcement",
			"--allow-privileged=true",
			"--profiling=false",
			// Every write to the API, at Metadata level (auditPolicy), so tests can count
			// the writes a component makes, no-op patches included (they change no
			// resourceVersion, so watching objects cannot see them).
			"--audit-policy-file=" + c.layout.auditPolicy(),
			"--audit-log-path=" + c.layout.auditLog(),
			"--audit-log-format=json",
			"--audit-log-mode=blocking",
			fmt.Sprintf("--audit-log-maxsize=%d", AuditLogMaxSizeMB),
			fmt.Sprintf("--audit-log-maxbackup=%d", AuditLogMaxBackups),
			"--v=1",
		},
		configs: []string{c.layout.auditPolicy()},
	}
}

// Audit log rotation: the API server starts a new file after AuditLogMaxSizeMB and keeps
// AuditLogMaxBackups rotated ones, so the log never holds more than about 200 MB.
const (
	AuditLogMaxSizeMB  = 50
	AuditLogMaxBackups = 3
)

// auditPolicy records who wrote what: every create, update, patch, delete and
// deletecollection at Metadata level (user, verb, object reference, response code; no
// bodies, so no Secret content), once per request when the response is complete, and
// nothing else. Reads and watches are not logged: they would multiply the volume and say
// nothing about writes.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    verbs: [create, update, patch, delete, deletecollection]
  - level: None
`

func (c *Cluster) controllerManagerProcess() process {
	pki := func(f string) string { return filepath.Join(c.layout.pki(), f) }
	kubeconfig := c.kubeconfigPath(controllerMgrIdentity)
	return process{
		name: controllerMgrName,
		bin:  c.kube("kube-controller-manager"),
		args: []string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			"--bind-address=" + ControlPlaneIP,
			"--leader-elect=false",
			"--use-service-account-credentials=true",
			"--service-account-private-key-file=" + pki("sa.key"),
			"--root-ca-file=" + pki("ca.crt"),
			"--cluster-signing-cert-file=" + pki("ca.crt"),
			"--cluster-signing-key-file=" + pki("ca.key"),
			"--service-cluster-ip-range=" + ServiceCIDR,
			"--cluster-cidr=" + PodCIDR,
			// Node-loss tests should not wait the default 50 s for NotReady; the kubelets
			// renew their leases every 5 s (nodeLeaseDurationSeconds 20).
			"--node-monitor-grace-period=20s",
			"--node-monitor-period=2s",
			"--v=1",
		},
	}
}

// resizerProcess is the external resizer of ExpandableStorageClassName
// (hack/localcluster/resizer), built from this repository by up. It talks to the API server
// as the admin: it updates PVs and PVC status, which no narrower built-in identity may.
func (c *Cluster) resizerProcess() process {
	return process{
		name: resizerName,
		bin:  c.layout.resizerBinary(),
		args: []string{"--kubeconfig=" + c.layout.kubeconfig(), "--class=" + ExpandableStorageClassName},
	}
}

func (c *Cluster) schedulerProcess() process {
	kubeconfig := c.kubeconfigPath(schedulerIdentity)
	return process{
		name: schedulerName,
		bin:  c.kube("kube-scheduler"),
		args: []string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			"--bind-address=" + ControlPlaneIP,
			"--leader-elect=false",
			"--v=1",
		},
	}
}

// kubeProxyConfig serves every node: all bridges share the host's network namespace, so one
// kube-proxy's rules apply to every node's Pods. It leaves conntrack sysctls alone and opens
// NodePorts only on cluster addresses.
func (c *Cluster) kubeProxyConfig() string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
mode: iptables
clusterCIDR: %s
hostnameOverride: %s
bindAddress: %s
healthzBindAddress: %s:%d
metricsBindAddress: %s:10249
nodePortAddresses: [%s]
oomScoreAdj: 0
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, c.kubeconfigPath(kubeProxyIdentity), PodCIDR, c.nodes[0].Name, ControlPlaneIP, ControlPlaneIP, kubeProxyHealthz, ControlPlaneIP, NodeCIDR)
}

func (c *Cluster) kubeProxyProcess() process {
	return process{
		name: kubeProxyName,
		bin:  c.kube("kube-proxy"),
		args: []string{"--config=" + c.layout.config("kube-proxy.yaml"), "--v=1"},
	}
}

// corefile serves the cluster domain from the API (with per-Pod A records, which etcd peers
// use) and answers NXDOMAIN for every other name: there is no forward plugin, so CoreDNS never
// queries a resolver outside this machine. The log plugin writes one line per query, with the
// client's address, to CoreDNS's log (CoreDNSLogPath), so tests can count the lookups a Pod
// makes. Answers for the cluster domain are not cached, as in kubeadm's Corefile ("disable
// success/denial" for the cluster domain): a cached NXDOMAIN for a Pod that is just starting
// would hide its record for the cache's lifetime, which slowed every etcd member join here
// while real clusters do not.
func (c *Cluster) corefile() string {
	return fmt.Sprintf(`%[1]s in-addr.arpa ip6.arpa {
    bind %[2]s
    log
    errors
    health %[2]s:%[3]d
    ready %[2]s:%[4]d
    kubernetes %[1]s in-addr.arpa ip6.arpa {
        kubeconfig %[5]s
        pods insecure
        ttl 5
    }
}
. {
    bind %[2]s
    log
    errors
    template ANY ANY {
        rcode NXDOMAIN
    }
}
`, DNSDomain, ControlPlaneIP, coreDNSHealthPort, coreDNSReadyPort, c.kubeconfigPath(coreDNSIdentity))
}

// CoreDNSLogMaxBytes bounds CoreDNS's log, which grows by a line per query (etcd members
// resolve their peers every few seconds: tens of MB an hour while e2e tests run clusters). Up
// moves a larger log to coredns.log.1, replacing the previous one, and restarts CoreDNS on a
// fresh file, so the two take at most about twice this.
const CoreDNSLogMaxBytes = 64 << 20

// rotateCoreDNSLog stops CoreDNS and moves its log aside when it passed CoreDNSLogMaxBytes;
// the start that follows opens a new one. A reader holding an offset into the old file then
// finds its offset past the new end and reads nothing, which tests report as a failed read.
func (c *Cluster) rotateCoreDNSLog(ctx context.Context) error {
	path := c.layout.logFile(coreDNSName)
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && st.Size() < CoreDNSLogMaxBytes) {
		return nil
	}
	if err != nil {
		return err
	}
	c.logf("rotating %s (%d MiB) to %s.1", path, st.Size()>>20, path)
	if err := c.layout.stop(ctx, coreDNSName, restartGrace); err != nil {
		return err
	}
	return os.Rename(path, path+".1")
}

func (c *Cluster) coreDNSProcess() process {
	return process{
		name:    coreDNSName,
		bin:     filepath.Join(c.coreDNSDir, "coredns"),
		args:    []string{"-conf", c.layout.config("Corefile")},
		configs: []string{c.layout.config("Corefile")},
	}
}

// writeControlPlaneFiles writes the configuration files of the host-wide components.
func (c *Cluster) writeControlPlaneFiles() error {
	files := map[string]string{
		c.layout.config("kube-proxy.yaml"): c.kubeProxyConfig(),
		c.layout.config("Corefile"):        c.corefile(),
		c.layout.auditPolicy():             auditPolicy,
	}
	if err := os.MkdirAll(c.layout.audit(), 0o755); err != nil {
		return err
	}
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		// kube-proxy exits when its config file changes, so rewrite only on change.
		if old, err := os.ReadFile(path); err == nil && string(old) == content {
			continue
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}
