package restore

import (
	"fmt"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/agentenv"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// The agent's command line: `etcd-operator restore-agent` restores; `etcd-operator restore-agent
// install DEST`, which the install-tools init container runs in the operator's image, copies the
// binary into a volume the etcd image then runs it from.
const (
	Command        = "restore-agent"
	CommandInstall = "install"
)

// Environment variables the seed's restore init container sets for the agent
// (docs/backup-restore.md, "Restore"). The Pod builder renders them from these names, so the two
// cannot disagree. The S3 credentials use the snapshot agent's names (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN; package agentenv), as files in the folder
// EnvS3CredentialsDir names or inline, and the termination message path is agentenv's too.
const (
	// EnvDataDir is etcd's --data-dir: the agent writes member/ into it.
	EnvDataDir = "RESTORE_DATA_DIR"
	// EnvName, EnvInitialCluster, EnvClusterToken and EnvPeerURL are the seed's --name,
	// --initial-cluster, --initial-cluster-token and --initial-advertise-peer-urls: etcdutl
	// writes the membership of the restored data dir from them, so they must be the ones etcd
	// then starts with.
	EnvName           = "RESTORE_NAME"
	EnvInitialCluster = "RESTORE_INITIAL_CLUSTER"
	EnvClusterToken   = "RESTORE_INITIAL_CLUSTER_TOKEN"
	EnvPeerURL        = "RESTORE_INITIAL_ADVERTISE_PEER_URLS"
	// EnvEtcdVersion is the version of etcd that will run on the restored data (the image the
	// agent runs in); a snapshot of a newer minor is refused.
	EnvEtcdVersion = "RESTORE_ETCD_VERSION"
	// EnvEtcdutl is the etcdutl to run; unset, etcdutl is looked up in PATH.
	EnvEtcdutl = "RESTORE_ETCDUTL"
	// EnvChecksum is spec.bootstrap.restore.checksum, "sha256:<hex>"; unset, the .sha256
	// sidecar is used when there is one.
	EnvChecksum = "RESTORE_CHECKSUM"
	// EnvTimeout bounds the whole run.
	EnvTimeout = "RESTORE_TIMEOUT"
	// EnvSource is SourceS3 or SourcePVC.
	EnvSource = "RESTORE_SOURCE"

	EnvPVCDir   = "RESTORE_PVC_DIR"
	EnvPVCClaim = "RESTORE_PVC_CLAIM"
	// EnvPVCPath is the snapshot's exact path on the claim (spec subPath).
	EnvPVCPath = "RESTORE_PVC_PATH"

	EnvS3Endpoint       = "RESTORE_S3_ENDPOINT"
	EnvS3Bucket         = "RESTORE_S3_BUCKET"
	EnvS3Key            = "RESTORE_S3_KEY"
	EnvS3Region         = "RESTORE_S3_REGION"
	EnvS3ForcePathStyle = "RESTORE_S3_FORCE_PATH_STYLE"
	EnvS3CAFile         = "RESTORE_S3_CA_FILE"
	// EnvS3CredentialsDir names the folder of the mounted credentials Secret's keys.
	EnvS3CredentialsDir = "RESTORE_S3_CREDENTIALS_DIR" //nolint:gosec // G101: the name of a variable, not a credential
)

// Defaults of the optional settings.
const (
	// DefaultTimeout bounds a restore: download, verification and etcdutl. An init container has
	// no deadline of its own, so the agent is what ends a restore that hangs, and says why; the
	// kubelet then runs it again.
	DefaultTimeout = 30 * time.Minute
	// EtcdutlName is the program looked up in PATH when EnvEtcdutl is unset.
	EtcdutlName = "etcdutl"
)

// Source kinds, the values of EnvSource.
const (
	SourceS3  = snapshot.DestinationS3
	SourcePVC = snapshot.DestinationPVC
)

// Config is the agent's validated environment.
type Config struct {
	// DataDir is etcd's data dir.
	DataDir string
	// Name, InitialCluster, ClusterToken and PeerURL are the seed's etcd identity flags.
	Name, InitialCluster, ClusterToken, PeerURL string
	// EtcdVersion is the target etcd version.
	EtcdVersion string
	// Etcdutl is the etcdutl path; empty means EtcdutlName in PATH.
	Etcdutl string
	// Checksum is the expected digest from the spec; empty when the spec names none.
	Checksum string
	// Timeout bounds the whole run.
	Timeout time.Duration
	// PVC is set for a PVC source, S3 for an S3 one; exactly one is.
	PVC *PVCSource
	S3  *S3Source
	// TerminationMessagePath receives the result.
	TerminationMessagePath string
}

// PVCSource is a snapshot file on a claim mounted at Dir.
type PVCSource struct {
	// Dir is where the claim is mounted.
	Dir string
	// Claim is the claim's name, for the artifact's URI.
	Claim string
	// Path is the snapshot's path on the claim: relative, cleaned, never a folder.
	Path string
}

// S3Source is one exact object in an S3-compatible store.
type S3Source struct {
	// Store is how to reach the store.
	Store agentenv.S3Store
	// Key is the object's exact key.
	Key string
}

// URI is the artifact's URI, as in an EtcdSnapshot's status.artifact.uri.
func (c Config) URI() string {
	switch {
	case c.S3 != nil:
		return snapshot.S3URI(c.S3.Store.Bucket, c.S3.Key)
	case c.PVC != nil:
		return "pvc://" + c.PVC.Claim + "/" + c.PVC.Path
	}
	return ""
}

// s3Vars are the variables of an S3 source.
var s3Vars = agentenv.S3Vars{
	Endpoint: EnvS3Endpoint, Bucket: EnvS3Bucket, Region: EnvS3Region, ForcePathStyle: EnvS3ForcePathStyle,
	CAFile: EnvS3CAFile, CredentialsDir: EnvS3CredentialsDir, Role: "source",
}

// ParseConfig reads and validates the agent's environment through lookup (os.LookupEnv in the
// agent). It reports every problem at once, each an *agentenv.ConfigError naming its variable,
// as a snapshot.ReasonInvalidConfig failure.
func ParseConfig(lookup func(string) (string, bool)) (Config, error) {
	p := agentenv.NewParser(lookup)
	cfg := Config{
		DataDir:                p.Required(EnvDataDir),
		Name:                   p.Required(EnvName),
		InitialCluster:         p.Required(EnvInitialCluster),
		ClusterToken:           p.Required(EnvClusterToken),
		PeerURL:                p.Required(EnvPeerURL),
		EtcdVersion:            p.Required(EnvEtcdVersion),
		Etcdutl:                p.Optional(EnvEtcdutl),
		Checksum:               p.Optional(EnvChecksum),
		Timeout:                p.Duration(EnvTimeout, DefaultTimeout, "30m"),
		TerminationMessagePath: agentenv.TerminationMessagePath(lookup),
	}
	p.Check(EnvDataDir, cfg.DataDir == "" || strings.HasPrefix(cfg.DataDir, "/"), "must be an absolute path")
	p.Check(EnvPeerURL, cfg.PeerURL == "" || agentenv.IsHTTPURL(cfg.PeerURL), "must be one http:// or https:// URL")
	p.Check(EnvInitialCluster, cfg.InitialCluster == "" || strings.Contains(","+cfg.InitialCluster+",", ","+cfg.Name+"="+cfg.PeerURL+","),
		"must list "+EnvName+"="+EnvPeerURL)
	p.Check(EnvEtcdVersion, cfg.EtcdVersion == "" || parseVersion(cfg.EtcdVersion) == nil, "must be MAJOR.MINOR.PATCH")
	p.Check(EnvChecksum, cfg.Checksum == "" || ValidChecksum(cfg.Checksum), "must be sha256:<64 lowercase hex digits>")
	switch src := p.Required(EnvSource); src {
	case SourcePVC:
		cfg.PVC = pvcSource(p)
	case SourceS3:
		cfg.S3 = s3Source(p)
	case "":
	default:
		p.Fail(EnvSource, fmt.Sprintf("must be %q or %q, not %q", SourceS3, SourcePVC, src))
	}
	if err := p.Err(); err != nil {
		return Config{}, snapshot.Fail(snapshot.ReasonInvalidConfig, err)
	}
	return cfg, nil
}

func pvcSource(p *agentenv.Parser) *PVCSource {
	c := &PVCSource{Dir: p.Required(EnvPVCDir), Claim: p.Required(EnvPVCClaim)}
	path, err := ExactPath(p.Optional(EnvPVCPath))
	if err != nil {
		p.Fail(EnvPVCPath, err.Error())
	}
	c.Path = path
	return c
}

func s3Source(p *agentenv.Parser) *S3Source {
	store := p.S3Store(s3Vars)
	key, err := ExactKey(p.Optional(EnvS3Key))
	if err != nil {
		p.Fail(EnvS3Key, err.Error())
	}
	return &S3Source{Store: store, Key: key}
}
