package crd_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/version"
)

// clusterCase is one EtcdCluster written to a real API server. create shapes the object that is
// created; update, when set, is then applied to it, which is how transition rules are reached.
// An empty wantField means the API server must accept every write.
type clusterCase struct {
	name      string
	create    []func(*etcdv1alpha2.EtcdCluster)
	update    func(*etcdv1alpha2.EtcdCluster)
	wantField string
	wantMsg   string
}

func runClusterCases(t *testing.T, cases []clusterCase) {
	t.Helper()
	ns := newNamespace(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cluster := minimalCluster(ns, fmt.Sprintf("c%d", i))
			for _, mutate := range tc.create {
				mutate(cluster)
			}
			err := createAndUpdate(t, cluster, tc.update)
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("want the object accepted, got: %v", err)
				}
				return
			}
			requireInvalid(t, err, tc.wantField, tc.wantMsg)
		})
	}
}

func fns(f ...func(*etcdv1alpha2.EtcdCluster)) []func(*etcdv1alpha2.EtcdCluster) { return f }

// TestEtcdClusterReferenceRules covers rules 1–13 and F1–F5 of docs/api.md, "EtcdCluster rules",
// each with an accepted and a rejected object.
func TestEtcdClusterReferenceRules(t *testing.T) {
	t.Parallel()
	runClusterCases(t, []clusterCase{
		// Rule 1.
		{name: "memory cluster paused at create", create: fns(withMemory("512Mi"), func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Replicas = ptr.To[int32](0) }),
			wantField: "spec", wantMsg: etcdv1alpha2.MsgMemoryPause},
		{name: "memory cluster paused by update", create: fns(withMemory("512Mi")),
			update:    func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Replicas = ptr.To[int32](0) },
			wantField: "spec", wantMsg: etcdv1alpha2.MsgMemoryPause},
		{name: "pvc cluster paused", update: func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Replicas = ptr.To[int32](0) }},
		// Rule 2.
		{name: "memory without size", create: fns(withMemory("0")), wantField: "spec", wantMsg: etcdv1alpha2.MsgMemorySize},
		{name: "memory with size", create: fns(withMemory("512Mi"))},
		// Rule 3.
		{name: "tls added", update: withServerTLS, wantField: "spec", wantMsg: etcdv1alpha2.MsgTLSAddRemove},
		{name: "tls removed", create: fns(withServerTLS),
			update:    func(c *etcdv1alpha2.EtcdCluster) { c.Spec.TLS = nil },
			wantField: "spec", wantMsg: etcdv1alpha2.MsgTLSAddRemove},
		{name: "tls kept while another field changes", create: fns(withServerTLS),
			update: func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Replicas = ptr.To[int32](5) }},
		// Rule 4.
		{name: "tls changed", create: fns(withServerTLS),
			update:    func(c *etcdv1alpha2.EtcdCluster) { c.Spec.TLS.Client.ServerSecretRef.Name = "other" },
			wantField: "spec", wantMsg: etcdv1alpha2.MsgTLSImmutable},
		// Rules 5 and 6.
		{name: "storage class added", update: withStorageClass("fast"),
			wantField: "spec", wantMsg: etcdv1alpha2.MsgStorageClassAddRemove},
		{name: "storage class removed", create: fns(withStorageClass("fast")),
			update:    func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Storage.StorageClassName = nil },
			wantField: "spec", wantMsg: etcdv1alpha2.MsgStorageClassAddRemove},
		{name: "storage class changed", create: fns(withStorageClass("fast")), update: withStorageClass("slow"),
			wantField: "spec", wantMsg: etcdv1alpha2.MsgStorageClassImmutable},
		{name: "storage class kept", create: fns(withStorageClass("fast")), update: withStorageClass("fast")},
		// Rules 7 and 8.
		{name: "auth added", create: fns(withServerTLS), update: withAuth,
			wantField: "spec", wantMsg: etcdv1alpha2.MsgAuthAddRemove},
		{name: "auth removed", create: fns(withAuth),
			update:    func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Auth = nil },
			wantField: "spec", wantMsg: etcdv1alpha2.MsgAuthAddRemove},
		{name: "auth changed", create: fns(withAuth),
			update:    func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Auth.RootCredentialsSecretRef.Name = "other" },
			wantField: "spec", wantMsg: etcdv1alpha2.MsgAuthImmutable},
		{name: "auth with client tls and credentials", create: fns(withAuth)},
		// Rules 9 and 10.
		{name: "auth without client tls", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.Auth = &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: secretRef("root")}
		}), wantField: "spec", wantMsg: etcdv1alpha2.MsgAuthRequiresClientTLS},
		{name: "auth without credentials", create: fns(withServerTLS, func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.Auth = &etcdv1alpha2.AuthSpec{Enabled: true}
		}), wantField: "spec", wantMsg: etcdv1alpha2.MsgAuthRequiresCredentialsRef},
		{name: "auth disabled needs nothing", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.Auth = &etcdv1alpha2.AuthSpec{Enabled: false}
		})},
		// Rules 11 and 12.
		{name: "bootstrap added", update: withS3Restore("snap.db"),
			wantField: "spec", wantMsg: etcdv1alpha2.MsgBootstrapAddRemove},
		{name: "bootstrap removed", create: fns(withS3Restore("snap.db")),
			update:    func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Bootstrap = nil },
			wantField: "spec", wantMsg: etcdv1alpha2.MsgBootstrapAddRemove},
		{name: "bootstrap changed", create: fns(withS3Restore("snap.db")), update: withS3Restore("other.db"),
			wantField: "spec", wantMsg: etcdv1alpha2.MsgBootstrapImmutable},
		{name: "bootstrap kept", create: fns(withS3Restore("snap.db")),
			update: func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Replicas = ptr.To[int32](1) }},
		// Rule 13.
		{name: "restore into memory", create: fns(withMemory("512Mi"), withS3Restore("snap.db")),
			wantField: "spec", wantMsg: etcdv1alpha2.MsgRestoreWithMemory},
		// F1.
		{name: "storage shrunk", create: fns(func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Storage.Size = ptr.To(resource.MustParse("2Gi")) }),
			update:    func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Storage.Size = ptr.To(resource.MustParse("1Gi")) },
			wantField: "spec.storage.size", wantMsg: etcdv1alpha2.MsgStorageShrink},
		{name: "storage grown", update: func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Storage.Size = ptr.To(resource.MustParse("2Gi")) }},
		{name: "storage rewritten in another unit", update: func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Storage.Size = ptr.To(resource.MustParse("1024Mi")) }},
		// F2.
		{name: "medium changed", update: withMemory("1Gi"),
			wantField: "spec.storage.medium", wantMsg: etcdv1alpha2.MsgMediumImmutable},
		// F3.
		{name: "client tls with two sources", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Client: &etcdv1alpha2.ClientTLS{
				ServerSecretRef: secretRef("server"),
				CertManager:     &etcdv1alpha2.ClientCertManagerTLS{ServerIssuerRef: etcdv1alpha2.IssuerReference{Name: "ca"}},
			}}
		}), wantField: "spec.tls.client", wantMsg: etcdv1alpha2.MsgClientTLSOneSource},
		{name: "client tls with no source", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Client: &etcdv1alpha2.ClientTLS{}}
		}), wantField: "spec.tls.client", wantMsg: etcdv1alpha2.MsgClientTLSOneSource},
		{name: "operator secret with cert-manager", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Client: &etcdv1alpha2.ClientTLS{
				OperatorClientSecretRef: secretRef("operator"),
				CertManager:             &etcdv1alpha2.ClientCertManagerTLS{ServerIssuerRef: etcdv1alpha2.IssuerReference{Name: "ca"}},
			}}
		}), wantField: "spec.tls.client", wantMsg: etcdv1alpha2.MsgClientTLSOperatorWithCertManager},
		{name: "client mtls from secrets", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Client: &etcdv1alpha2.ClientTLS{
				ServerSecretRef: secretRef("server"), OperatorClientSecretRef: secretRef("operator"),
			}}
		})},
		// F4.
		{name: "peer tls with two sources", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Peer: &etcdv1alpha2.PeerTLS{
				SecretRef:   secretRef("peer"),
				CertManager: &etcdv1alpha2.PeerCertManagerTLS{IssuerRef: etcdv1alpha2.IssuerReference{Name: "ca"}},
			}}
		}), wantField: "spec.tls.peer", wantMsg: etcdv1alpha2.MsgPeerTLSOneSource},
		{name: "peer tls with no source", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Peer: &etcdv1alpha2.PeerTLS{}}
		}), wantField: "spec.tls.peer", wantMsg: etcdv1alpha2.MsgPeerTLSOneSource},
		{name: "peer tls from cert-manager", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Peer: &etcdv1alpha2.PeerTLS{
				CertManager: &etcdv1alpha2.PeerCertManagerTLS{IssuerRef: etcdv1alpha2.IssuerReference{Name: "ca", Kind: "ClusterIssuer"}},
			}}
		})},
		// F5.
		{name: "restore source in two places", create: fns(withS3Restore("snap.db"), func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.Bootstrap.Restore.Source.PVC = &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "backups", SubPath: "snap.db"}
		}), wantField: "spec.bootstrap.restore.source", wantMsg: etcdv1alpha2.MsgSnapshotLocationOneOf},
		{name: "restore from an s3 prefix", create: fns(withS3Restore("")),
			wantField: "spec.bootstrap.restore", wantMsg: etcdv1alpha2.MsgRestoreS3Key},
		{name: "restore from a pvc folder", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.Bootstrap = &etcdv1alpha2.BootstrapSpec{Restore: &etcdv1alpha2.RestoreSpec{
				Source: etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "backups"}},
			}}
		}), wantField: "spec.bootstrap.restore", wantMsg: etcdv1alpha2.MsgRestorePVCSubPath},
		{name: "restore from a pvc file", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.Bootstrap = &etcdv1alpha2.BootstrapSpec{Restore: &etcdv1alpha2.RestoreSpec{
				Source: etcdv1alpha2.SnapshotLocation{PVC: &etcdv1alpha2.PVCSnapshotLocation{ClaimName: "backups", SubPath: "daily/snap.db"}},
			}}
		})},
	})
}

func setVersion(v string) func(*etcdv1alpha2.EtcdCluster) {
	return func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Version = v }
}

// TestEtcdClusterProjectRules covers rules 14–18 of docs/api.md, "EtcdCluster rules", which this
// project adds.
func TestEtcdClusterProjectRules(t *testing.T) {
	t.Parallel()
	runClusterCases(t, []clusterCase{
		// Rule 14.
		{name: "patch upgrade", update: setVersion("3.6.9")},
		{name: "patch downgrade", update: setVersion("3.6.1")},
		{name: "one minor up", update: setVersion("3.7.0")},
		{name: "minor downgrade", update: setVersion("3.5.21"), wantField: "spec.version",
			wantMsg: fmt.Sprintf(etcdv1alpha2.MsgVersionDowngradeFormat, "3.6.5", "3.5.21", "3.6", "3.7")},
		{name: "minor skipped", create: fns(setVersion("3.5.21")), update: setVersion("3.7.0"), wantField: "spec.version",
			wantMsg: fmt.Sprintf(etcdv1alpha2.MsgVersionSkipFormat, "3.5.21", "3.7.0", "3.6")},
		{name: "major changed", update: setVersion("4.0.0"), wantField: "spec.version",
			wantMsg: fmt.Sprintf(etcdv1alpha2.MsgVersionMajorFormat, "3.6.5", "4.0.0", "3")},
		{name: "two-digit minors compare as numbers", create: fns(setVersion("3.9.1")), update: setVersion("3.10.0")},
		// Rule 15.
		{name: "reclaim policy retain", create: fns(func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Storage.ReclaimPolicy = etcdv1alpha2.ReclaimPolicyRetain })},
		{name: "reclaim policy unknown", create: fns(func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Storage.ReclaimPolicy = "Recycle" }),
			wantField: "spec.storage.reclaimPolicy", wantMsg: `supported values: "Delete", "Retain"`},
		// Rule 16.
		{name: "client service load balancer", create: fns(withAuth, func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.ClientService = &etcdv1alpha2.ClientServiceSpec{Type: "LoadBalancer", Annotations: map[string]string{"lb.example.com/internal": "true"}}
		})},
		{name: "client service type unknown", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.ClientService = &etcdv1alpha2.ClientServiceSpec{Type: "ExternalName"}
		}), wantField: "spec.clientService.type", wantMsg: `supported values: "ClusterIP", "NodePort", "LoadBalancer"`},
		{name: "client service reserved annotation", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.ClientService = &etcdv1alpha2.ClientServiceSpec{Annotations: map[string]string{etcdv1alpha2.AnnotationReplace: "x"}}
		}), wantField: "spec.clientService.annotations", wantMsg: etcdv1alpha2.MsgClientServiceReservedAnnotation},
		// Rule 17.
		{name: "security context all positive", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.PodSecurityContext = &etcdv1alpha2.PodSecurityOverrides{
				RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000),
				SupplementalGroups: []int64{3000, 3001},
			}
		})},
		{name: "run as root", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.PodSecurityContext = &etcdv1alpha2.PodSecurityOverrides{RunAsUser: ptr.To[int64](0)}
		}), wantField: "spec.podSecurityContext", wantMsg: etcdv1alpha2.MsgRunAsUserPositive},
		{name: "run as group 0", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.PodSecurityContext = &etcdv1alpha2.PodSecurityOverrides{RunAsGroup: ptr.To[int64](0)}
		}), wantField: "spec.podSecurityContext", wantMsg: etcdv1alpha2.MsgRunAsGroupPositive},
		{name: "negative fs group", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.PodSecurityContext = &etcdv1alpha2.PodSecurityOverrides{FSGroup: ptr.To[int64](-1)}
		}), wantField: "spec.podSecurityContext", wantMsg: etcdv1alpha2.MsgFSGroupPositive},
		{name: "supplemental group 0", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.PodSecurityContext = &etcdv1alpha2.PodSecurityOverrides{SupplementalGroups: []int64{5, 0}}
		}), wantField: "spec.podSecurityContext", wantMsg: etcdv1alpha2.MsgSupplementalGroupsPositive},
		{name: "selinux level only", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.PodSecurityContext = &etcdv1alpha2.PodSecurityOverrides{SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c1,c2", Type: "container_t"}}
		})},
		{name: "selinux user", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.PodSecurityContext = &etcdv1alpha2.PodSecurityOverrides{SELinuxOptions: &corev1.SELinuxOptions{User: "system_u"}}
		}), wantField: "spec.podSecurityContext", wantMsg: etcdv1alpha2.MsgSELinuxRestricted},
		{name: "selinux unconfined type", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.PodSecurityContext = &etcdv1alpha2.PodSecurityOverrides{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}}
		}), wantField: "spec.podSecurityContext", wantMsg: etcdv1alpha2.MsgSELinuxRestricted},
		// Rule 18.
		{name: "restore checksum", create: fns(withS3Restore("snap.db"), func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.Bootstrap.Restore.Checksum = "sha256:" + fmt.Sprintf("%064x", 42)
		})},
		{name: "restore checksum in upper case", create: fns(withS3Restore("snap.db"), func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.Bootstrap.Restore.Checksum = "sha256:" + fmt.Sprintf("%064X", 0xABC)
		}), wantField: "spec.bootstrap.restore.checksum", wantMsg: etcdv1alpha2.MsgRestoreChecksumFormat},
		{name: "restore checksum with another algorithm", create: fns(withS3Restore("snap.db"), func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.Bootstrap.Restore.Checksum = "md5:d41d8cd98f00b204e9800998ecf8427e"
		}), wantField: "spec.bootstrap.restore.checksum", wantMsg: etcdv1alpha2.MsgRestoreChecksumFormat},
	})
}

// TestEtcdClusterSchemaRules covers the plain OpenAPI constraints users meet most often.
func TestEtcdClusterSchemaRules(t *testing.T) {
	t.Parallel()
	runClusterCases(t, []clusterCase{
		{name: "version with a v", create: fns(setVersion("v3.6.5")), wantField: "spec.version", wantMsg: "should match"},
		{name: "version without a patch", create: fns(setVersion("3.6")), wantField: "spec.version", wantMsg: "should match"},
		{name: "negative replicas", create: fns(func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Replicas = ptr.To[int32](-1) }),
			wantField: "spec.replicas", wantMsg: "greater than or equal to 0"},
		{name: "zero progress deadline", create: fns(func(c *etcdv1alpha2.EtcdCluster) { c.Spec.ProgressDeadlineSeconds = ptr.To[int32](0) }),
			wantField: "spec.progressDeadlineSeconds", wantMsg: "greater than or equal to 1"},
		{name: "compaction retention as a duration", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.Options = &etcdv1alpha2.EtcdOptions{AutoCompactionMode: etcdv1alpha2.AutoCompactionPeriodic, AutoCompactionRetention: "1h30m"}
		})},
		{name: "compaction retention malformed", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.Options = &etcdv1alpha2.EtcdOptions{AutoCompactionRetention: "one hour"}
		}), wantField: "spec.options.autoCompactionRetention", wantMsg: "should match"},
		{name: "compaction mode unknown", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.Options = &etcdv1alpha2.EtcdOptions{AutoCompactionMode: "hourly"}
		}), wantField: "spec.options.autoCompactionMode", wantMsg: `supported values: "periodic", "revision"`},
		{name: "zero snapshot count", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.Options = &etcdv1alpha2.EtcdOptions{SnapshotCount: ptr.To[int64](0)}
		}), wantField: "spec.options.snapshotCount", wantMsg: "greater than or equal to 1"},
		{name: "negative quota", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.Options = &etcdv1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](-1)}
		}), wantField: "spec.options.quotaBackendBytes", wantMsg: "greater than or equal to 0"},
		{name: "quota beyond what etcd can map", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.Options = &etcdv1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](300 << 40)}
		}), wantField: "spec.options.quotaBackendBytes", wantMsg: "less than or equal to 1099511627776"},
		{name: "issuer kind unknown", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Peer: &etcdv1alpha2.PeerTLS{
				CertManager: &etcdv1alpha2.PeerCertManagerTLS{IssuerRef: etcdv1alpha2.IssuerReference{Name: "ca", Kind: "Vault"}},
			}}
		}), wantField: "spec.tls.peer.certManager.issuerRef.kind", wantMsg: `supported values: "Issuer", "ClusterIssuer"`},
		{name: "fs group change policy unknown", create: fns(func(c *etcdv1alpha2.EtcdCluster) {
			c.Spec.PodSecurityContext = &etcdv1alpha2.PodSecurityOverrides{FSGroupChangePolicy: ptr.To[corev1.PodFSGroupChangePolicy]("Never")}
		}), wantField: "spec.podSecurityContext.fsGroupChangePolicy", wantMsg: `supported values: "OnRootMismatch", "Always"`},
	})
}

// TestEtcdClusterNames covers the name rule: every derived object name must stay valid.
func TestEtcdClusterNames(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	cases := []struct {
		name   string
		accept bool
	}{
		{name: strings.Repeat("a", 56), accept: true},
		{name: "etcd-main", accept: true},
		{name: strings.Repeat("a", 57)},
		{name: "1etcd"},
		{name: "etcd.main"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := k8sClient.Create(t.Context(), minimalCluster(ns, tc.name))
			if tc.accept {
				if err != nil {
					t.Fatalf("want %q accepted, got: %v", tc.name, err)
				}
				return
			}
			// A rule on the object root is reported without a field path (shown as "<nil>"); CRD
			// schemas cannot point fieldPath at metadata, so the message names the field instead.
			requireInvalid(t, err, "<nil>", etcdv1alpha2.MsgClusterName)
		})
	}
}

func withReplicas(n int32) func(*etcdv1alpha2.EtcdCluster) {
	return func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Replicas = ptr.To(n) }
}

func withSize(size string) func(*etcdv1alpha2.EtcdCluster) {
	return func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Storage.Size = ptr.To(resource.MustParse(size)) }
}

func withOptions(o etcdv1alpha2.EtcdOptions) func(*etcdv1alpha2.EtcdCluster) {
	return func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Options = &o }
}

// TestEtcdClusterInputRules covers rules 19 and later of api.md ("EtcdCluster rules"): input that
// the API server would otherwise accept and the cluster could then not run, or run badly.
func TestEtcdClusterInputRules(t *testing.T) {
	t.Parallel()
	runClusterCases(t, []clusterCase{
		// Rule 19.
		{name: "seven members", create: fns(withReplicas(7))},
		{name: "eight members", create: fns(withReplicas(8)), wantField: "spec.replicas", wantMsg: etcdv1alpha2.MsgReplicasMax},
		{name: "scaled beyond seven", update: withReplicas(9), wantField: "spec.replicas", wantMsg: etcdv1alpha2.MsgReplicasMax},
		// Rule 20.
		{name: "snapshot count at etcd 3.5's default", create: fns(withOptions(etcdv1alpha2.EtcdOptions{SnapshotCount: ptr.To[int64](100000)}))},
		{name: "snapshot count beyond the bound", create: fns(withOptions(etcdv1alpha2.EtcdOptions{SnapshotCount: ptr.To[int64](100001)})),
			wantField: "spec.options.snapshotCount", wantMsg: etcdv1alpha2.MsgSnapshotCountMax},
		// Rule 21.
		{name: "revision retention as a count", create: fns(withOptions(etcdv1alpha2.EtcdOptions{
			AutoCompactionMode: etcdv1alpha2.AutoCompactionRevision, AutoCompactionRetention: "1000",
		}))},
		{name: "revision retention as a duration", create: fns(withOptions(etcdv1alpha2.EtcdOptions{
			AutoCompactionMode: etcdv1alpha2.AutoCompactionRevision, AutoCompactionRetention: "1h",
		})), wantField: "spec.options.autoCompactionRetention", wantMsg: etcdv1alpha2.MsgRevisionRetention},
		{name: "periodic retention in hours", create: fns(withOptions(etcdv1alpha2.EtcdOptions{
			AutoCompactionMode: etcdv1alpha2.AutoCompactionPeriodic, AutoCompactionRetention: "12",
		}))},
		{name: "retention as a duration in etcd's default mode", create: fns(withOptions(etcdv1alpha2.EtcdOptions{AutoCompactionRetention: "30m"}))},
		// Rule 22.
		{name: "pvc at the floor", create: fns(withSize("256Mi"))},
		{name: "pvc below the floor", create: fns(withSize("255Mi")), wantField: "spec.storage.size", wantMsg: etcdv1alpha2.MsgStorageSizeFloor},
		{name: "pvc of a fraction of a byte", create: fns(withSize("100m")), wantField: "spec.storage.size", wantMsg: etcdv1alpha2.MsgStorageSizeFloor},
		{name: "pvc of zero bytes", create: fns(withSize("0")), wantField: "spec.storage.size", wantMsg: etcdv1alpha2.MsgStorageSizeFloor},
		{name: "pvc of negative size", create: fns(withSize("-1Gi")), wantField: "spec.storage.size", wantMsg: etcdv1alpha2.MsgStorageSizeFloor},
		{name: "memory at the floor", create: fns(withMemory("256Mi"))},
		{name: "memory below the floor", create: fns(withMemory("128Mi")), wantField: "spec.storage.size", wantMsg: etcdv1alpha2.MsgStorageSizeFloor},
		// Rule 23.
		{name: "quota equal to the size", create: fns(withSize("1Gi"), withOptions(etcdv1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](1 << 30)}))},
		{name: "quota beyond the size", create: fns(withOptions(etcdv1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](1<<30 + 1)})),
			wantField: "spec.options.quotaBackendBytes", wantMsg: etcdv1alpha2.MsgQuotaExceedsStorage},
		{name: "quota beyond a memory size", create: fns(withMemory("512Mi"), withOptions(etcdv1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](1 << 30)})),
			wantField: "spec.options.quotaBackendBytes", wantMsg: etcdv1alpha2.MsgQuotaExceedsStorage},
		{name: "etcd's default quota on a 1Gi volume", create: fns(withOptions(etcdv1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](0)})),
			wantField: "spec.options.quotaBackendBytes", wantMsg: etcdv1alpha2.MsgQuotaExceedsStorage},
		{name: "etcd's default quota on a 2Gi volume", create: fns(withSize("2Gi"), withOptions(etcdv1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](0)}))},
		{name: "storage grown past the quota", create: fns(withSize("4Gi"), withOptions(etcdv1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](3 << 30)}))},
		{name: "quota raised past the size", create: fns(withSize("4Gi")),
			update:    withOptions(etcdv1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](5 << 30)}),
			wantField: "spec.options.quotaBackendBytes", wantMsg: etcdv1alpha2.MsgQuotaExceedsStorage},
	})
}

func withLabels(labels map[string]string) func(*etcdv1alpha2.EtcdCluster) {
	return func(c *etcdv1alpha2.EtcdCluster) {
		c.Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{Labels: labels}
	}
}

func withAnnotations(annotations map[string]string) func(*etcdv1alpha2.EtcdCluster) {
	return func(c *etcdv1alpha2.EtcdCluster) {
		c.Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{Annotations: annotations}
	}
}

func withNodeSelector(selector map[string]string) func(*etcdv1alpha2.EtcdCluster) {
	return func(c *etcdv1alpha2.EtcdCluster) { c.Spec.NodeSelector = selector }
}

func withClientServiceAnnotations(annotations map[string]string) func(*etcdv1alpha2.EtcdCluster) {
	return func(c *etcdv1alpha2.EtcdCluster) {
		c.Spec.ClientService = &etcdv1alpha2.ClientServiceSpec{Annotations: annotations}
	}
}

// manyKeys returns n distinct valid keys.
func manyKeys(n int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m[fmt.Sprintf("k%d", i)] = "v"
	}
	return m
}

// TestEtcdClusterMetadataRules covers rule 24: labels, annotations and node selectors the API
// server would refuse on the objects the operator creates from them.
func TestEtcdClusterMetadataRules(t *testing.T) {
	t.Parallel()
	longPrefix := strings.Repeat("a", 254) + "/name"
	maxPrefix := strings.Repeat("a", 253) + "/name"
	runClusterCases(t, []clusterCase{
		{name: "valid labels", create: fns(withLabels(map[string]string{
			"team": "storage", "example.com/tier": "db-1", "empty": "", maxPrefix: strings.Repeat("v", 63), strings.Repeat("n", 63): "x",
		}))},
		{name: "label key with a space", create: fns(withLabels(map[string]string{"team name": "a"})),
			wantField: "spec.additionalMetadata.labels", wantMsg: etcdv1alpha2.MsgAdditionalLabelKey},
		{name: "label key with two slashes", create: fns(withLabels(map[string]string{"a/b/c": "a"})),
			wantField: "spec.additionalMetadata.labels", wantMsg: etcdv1alpha2.MsgAdditionalLabelKey},
		{name: "label key prefix too long", create: fns(withLabels(map[string]string{longPrefix: "a"})),
			wantField: "spec.additionalMetadata.labels", wantMsg: etcdv1alpha2.MsgAdditionalLabelKey},
		{name: "label key name too long", create: fns(withLabels(map[string]string{strings.Repeat("n", 64): "a"})),
			wantField: "spec.additionalMetadata.labels", wantMsg: etcdv1alpha2.MsgAdditionalLabelKey},
		{name: "label key with an upper-case prefix", create: fns(withLabels(map[string]string{"Example.com/tier": "a"})),
			wantField: "spec.additionalMetadata.labels", wantMsg: etcdv1alpha2.MsgAdditionalLabelKey},
		{name: "label value with a space", create: fns(withLabels(map[string]string{"team": "storage team"})),
			wantField: "spec.additionalMetadata.labels", wantMsg: etcdv1alpha2.MsgAdditionalLabelValue},
		{name: "label value ending in a dash", create: fns(withLabels(map[string]string{"team": "storage-"})),
			wantField: "spec.additionalMetadata.labels", wantMsg: etcdv1alpha2.MsgAdditionalLabelValue},
		{name: "label value too long", create: fns(withLabels(map[string]string{"team": strings.Repeat("v", 64)})),
			wantField: "spec.additionalMetadata.labels.team", wantMsg: "may not be more than 63"},
		{name: "too many labels", create: fns(withLabels(manyKeys(65))),
			wantField: "spec.additionalMetadata.labels", wantMsg: "must have at most 64 items"},
		{name: "valid annotations", create: fns(withAnnotations(map[string]string{
			"note": "any text: spaces, slashes / and {\"json\": true}", "Example.com/Owner": "x", "empty": "",
		}))},
		{name: "annotation key with a space", create: fns(withAnnotations(map[string]string{"my note": "x"})),
			wantField: "spec.additionalMetadata.annotations", wantMsg: etcdv1alpha2.MsgAdditionalAnnotationKey},
		{name: "annotations of 128 KiB", create: fns(withAnnotations(map[string]string{"k": strings.Repeat("x", 128<<10-1)}))},
		{name: "annotations beyond 128 KiB", create: fns(withAnnotations(map[string]string{"k": strings.Repeat("x", 128<<10)})),
			wantField: "spec.additionalMetadata.annotations", wantMsg: etcdv1alpha2.MsgAdditionalAnnotationsSize},
		{name: "annotations beyond 128 KiB counted in bytes", create: fns(withAnnotations(map[string]string{"k": strings.Repeat("é", 64<<10)})),
			wantField: "spec.additionalMetadata.annotations", wantMsg: etcdv1alpha2.MsgAdditionalAnnotationsSize},
		{name: "valid node selector", create: fns(withNodeSelector(map[string]string{"kubernetes.io/hostname": "node-1", "disktype": "nvme"}))},
		{name: "node selector key invalid", create: fns(withNodeSelector(map[string]string{"disk type": "nvme"})),
			wantField: "spec.nodeSelector", wantMsg: etcdv1alpha2.MsgNodeSelectorKey},
		{name: "node selector value invalid", create: fns(withNodeSelector(map[string]string{"disktype": "nvme/ssd"})),
			wantField: "spec.nodeSelector", wantMsg: etcdv1alpha2.MsgNodeSelectorValue},
		{name: "valid client service annotations", create: fns(withClientServiceAnnotations(map[string]string{
			"service.beta.kubernetes.io/aws-load-balancer-internal": "true", "note": "free text",
		}))},
		{name: "client service annotation key invalid", create: fns(withClientServiceAnnotations(map[string]string{"lb:internal": "true"})),
			wantField: "spec.clientService.annotations", wantMsg: etcdv1alpha2.MsgClientServiceAnnotationKey},
		{name: "client service annotations beyond 64 KiB", create: fns(withClientServiceAnnotations(map[string]string{"k": strings.Repeat("x", 64<<10)})),
			wantField: "spec.clientService.annotations", wantMsg: etcdv1alpha2.MsgClientServiceAnnotationsSize},
	})
}

func withClientService(typ etcdv1alpha2.ClientServiceType, allowUnauthenticated bool) func(*etcdv1alpha2.EtcdCluster) {
	return func(c *etcdv1alpha2.EtcdCluster) {
		c.Spec.ClientService = &etcdv1alpha2.ClientServiceSpec{Type: typ, AllowUnauthenticated: allowUnauthenticated}
	}
}

func withClientMTLS(c *etcdv1alpha2.EtcdCluster) {
	c.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Client: &etcdv1alpha2.ClientTLS{
		ServerSecretRef: secretRef("server"), OperatorClientSecretRef: secretRef("operator"),
	}}
}

func withCertManagerMTLS(c *etcdv1alpha2.EtcdCluster) {
	c.Spec.TLS = &etcdv1alpha2.EtcdClusterTLS{Client: &etcdv1alpha2.ClientTLS{CertManager: &etcdv1alpha2.ClientCertManagerTLS{
		ServerIssuerRef: etcdv1alpha2.IssuerReference{Name: "ca"}, OperatorClientIssuerRef: &etcdv1alpha2.IssuerReference{Name: "ca"},
	}}}
}

// TestEtcdClusterExposureRule covers rule 25: a client Service reachable from outside the cluster
// needs authenticated clients, or an explicit acceptance of an unauthenticated endpoint.
func TestEtcdClusterExposureRule(t *testing.T) {
	t.Parallel()
	runClusterCases(t, []clusterCase{
		{name: "cluster ip in plaintext", create: fns(withClientService("ClusterIP", false))},
		{name: "load balancer in plaintext", create: fns(withClientService("LoadBalancer", false)),
			wantField: "spec.clientService.type", wantMsg: etcdv1alpha2.MsgClientServiceExposed},
		{name: "node port in plaintext", create: fns(withClientService("NodePort", false)),
			wantField: "spec.clientService.type", wantMsg: etcdv1alpha2.MsgClientServiceExposed},
		{name: "node port with server tls only", create: fns(withServerTLS, withClientService("NodePort", false)),
			wantField: "spec.clientService.type", wantMsg: etcdv1alpha2.MsgClientServiceExposed},
		{name: "load balancer exposed by an update", update: withClientService("LoadBalancer", false),
			wantField: "spec.clientService.type", wantMsg: etcdv1alpha2.MsgClientServiceExposed},
		{name: "load balancer with tls and auth", create: fns(withAuth, withClientService("LoadBalancer", false))},
		{name: "node port with client certificates", create: fns(withClientMTLS, withClientService("NodePort", false))},
		{name: "load balancer with cert-manager client certificates", create: fns(withCertManagerMTLS, withClientService("LoadBalancer", false))},
		{name: "load balancer accepted unauthenticated", create: fns(withClientService("LoadBalancer", true))},
		{name: "node port accepted unauthenticated with server tls", create: fns(withServerTLS, withClientService("NodePort", true))},
	})
}

// justBelow is the highest version lower than v, taking 99 for "any" patch or minor.
func justBelow(v version.Version) version.Version {
	switch {
	case v.Patch > 0:
		return version.Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch - 1}
	case v.Minor > 0:
		return version.Version{Major: v.Major, Minor: v.Minor - 1, Patch: 99}
	default:
		return version.Version{Major: v.Major - 1, Minor: 99, Patch: 99}
	}
}

// TestEtcdClusterVersionFloor covers rule 26 against version.Oldest, the floor the controller
// applies, so that admission and the controller agree on it.
func TestEtcdClusterVersionFloor(t *testing.T) {
	t.Parallel()
	cases := []clusterCase{
		{name: "the oldest version the operator runs", create: fns(setVersion(version.Oldest.String()))},
		{name: "just below the oldest", create: fns(setVersion(justBelow(version.Oldest).String())),
			wantField: "spec.version", wantMsg: etcdv1alpha2.MsgVersionTooOld},
		{name: "etcd 3.4", create: fns(setVersion("3.4.0")), wantField: "spec.version", wantMsg: etcdv1alpha2.MsgVersionTooOld},
		{name: "etcd 2", create: fns(setVersion("2.3.8")), wantField: "spec.version", wantMsg: etcdv1alpha2.MsgVersionTooOld},
	}
	for _, v := range version.Supported() {
		cases = append(cases, clusterCase{name: "supported " + v.String(), create: fns(setVersion(v.String()))})
	}
	runClusterCases(t, cases)
}
