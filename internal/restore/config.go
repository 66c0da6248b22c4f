package restore

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

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
// cannot disagree. The S3 credentials use the snapshot agent's file names (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), in the folder EnvS3CredentialsDir names or inline.
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
	// Store is how to reach the store; its KeyPrefix is unused.
	Store snapshot.S3Config
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

// ParseConfig reads and validates the agent's environment through lookup (os.LookupEnv in the
// agent). It reports every problem at once, each naming its variable, as a
// snapshot.ReasonInvalidConfig failure.
func ParseConfig(lookup func(string) (string, bool)) (Config, error) {
	p := parser{lookup: lookup}
	cfg := Config{
		DataDir:                p.required(EnvDataDir),
		Name:                   p.required(EnvName),
		InitialCluster:         p.required(EnvInitialCluster),
		ClusterToken:           p.required(EnvClusterToken),
		PeerURL:                p.required(EnvPeerURL),
		EtcdVersion:            p.required(EnvEtcdVersion),
		Etcdutl:                p.str(EnvEtcdutl),
		Checksum:               p.str(EnvChecksum),
		Timeout:                p.duration(EnvTimeout, DefaultTimeout),
		TerminationMessagePath: p.str(snapshot.EnvTerminationMessagePath),
	}
	if cfg.TerminationMessagePath == "" {
		cfg.TerminationMessagePath = snapshot.DefaultTerminationMessagePath
	}
	p.check(EnvDataDir, cfg.DataDir == "" || strings.HasPrefix(cfg.DataDir, "/"), "must be an absolute path")
	p.check(EnvPeerURL, cfg.PeerURL == "" || isHTTPURL(cfg.PeerURL), "must be one http:// or https:// URL")
	p.check(EnvInitialCluster, cfg.InitialCluster == "" || strings.Contains(","+cfg.InitialCluster+",", ","+cfg.Name+"="+cfg.PeerURL+","),
		"must list "+EnvName+"="+EnvPeerURL)
	p.check(EnvEtcdVersion, cfg.EtcdVersion == "" || parseVersion(cfg.EtcdVersion) == nil, "must be MAJOR.MINOR.PATCH")
	p.check(EnvChecksum, cfg.Checksum == "" || ValidChecksum(cfg.Checksum), "must be sha256:<64 lowercase hex digits>")
	switch src := p.required(EnvSource); src {
	case SourcePVC:
		cfg.PVC = p.pvc()
	case SourceS3:
		cfg.S3 = p.s3()
	case "":
	default:
		p.fail(EnvSource, fmt.Sprintf("must be %q or %q, not %q", SourceS3, SourcePVC, src))
	}
	if len(p.errs) > 0 {
		return Config{}, snapshot.Fail(snapshot.ReasonInvalidConfig, configErrors(p.errs))
	}
	return cfg, nil
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// configErrors lists every problem on one line, as a condition message shows it best.
type configErrors []error

func (e configErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap gives errors.As each *snapshot.ConfigError.
func (e configErrors) Unwrap() []error { return e }

// parser collects every problem instead of stopping at the first.
type parser struct {
	lookup func(string) (string, bool)
	errs   []error
}

func (p *parser) fail(name, problem string) {
	p.errs = append(p.errs, &snapshot.ConfigError{Var: name, Problem: problem})
}

func (p *parser) check(name string, ok bool, problem string) {
	if !ok {
		p.fail(name, problem)
	}
}

func (p *parser) str(name string) string {
	v, _ := p.lookup(name)
	return strings.TrimSpace(v)
}

func (p *parser) required(name string) string {
	v := p.str(name)
	if v == "" {
		p.fail(name, "is required")
	}
	return v
}

func (p *parser) duration(name string, def time.Duration) time.Duration {
	v := p.str(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		p.fail(name, fmt.Sprintf("must be a positive duration such as 30m, not %q", v))
		return def
	}
	return d
}

func (p *parser) pvc() *PVCSource {
	c := &PVCSource{Dir: p.required(EnvPVCDir), Claim: p.required(EnvPVCClaim)}
	path, err := ExactPath(p.str(EnvPVCPath))
	if err != nil {
		p.fail(EnvPVCPath, err.Error())
	}
	c.Path = path
	return c
}

func (p *parser) s3() *S3Source {
	store := snapshot.S3Config{
		Endpoint:       p.required(EnvS3Endpoint),
		Bucket:         p.required(EnvS3Bucket),
		Region:         p.str(EnvS3Region),
		ForcePathStyle: p.boolean(EnvS3ForcePathStyle),
		CAFile:         p.str(EnvS3CAFile),
	}
	if store.Region == "" {
		store.Region = snapshot.DefaultS3Region
	}
	p.check(EnvS3Endpoint, store.Endpoint == "" || isHTTPURL(store.Endpoint), fmt.Sprintf("must be an http:// or https:// URL, not %q", store.Endpoint))
	key, err := ExactKey(p.str(EnvS3Key))
	if err != nil {
		p.fail(EnvS3Key, err.Error())
	}
	if dir := p.str(EnvS3CredentialsDir); dir != "" {
		store.AccessKeyID = snapshot.Credential{File: dir + "/" + snapshot.EnvAWSAccessKeyID}
		store.SecretAccessKey = snapshot.Credential{File: dir + "/" + snapshot.EnvAWSSecretAccessKey}
		store.SessionToken = snapshot.Credential{File: dir + "/" + snapshot.EnvAWSSessionToken}
		return &S3Source{Store: store, Key: key}
	}
	id, _ := p.lookup(snapshot.EnvAWSAccessKeyID)
	secret, _ := p.lookup(snapshot.EnvAWSSecretAccessKey)
	token, _ := p.lookup(snapshot.EnvAWSSessionToken)
	if strings.TrimSpace(id) == "" || strings.TrimSpace(secret) == "" {
		p.fail(snapshot.EnvAWSAccessKeyID, "and "+snapshot.EnvAWSSecretAccessKey+" are required for an S3 source (or "+EnvS3CredentialsDir+")")
	}
	store.AccessKeyID = snapshot.Credential{Value: snapshot.Secret(strings.TrimSpace(id))}
	store.SecretAccessKey = snapshot.Credential{Value: snapshot.Secret(strings.TrimSpace(secret))}
	store.SessionToken = snapshot.Credential{Value: snapshot.Secret(strings.TrimSpace(token))}
	return &S3Source{Store: store, Key: key}
}

func (p *parser) boolean(name string) bool {
	v := p.str(name)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		p.fail(name, fmt.Sprintf("must be true or false, not %q", v))
	}
	return b
}
