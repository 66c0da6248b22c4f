package snapshot

import (
	"fmt"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/agentenv"
)

// Environment variables the snapshot Job sets for the agent (docs/backup-restore.md,
// "Environment"). The controller builds the Job from these names, so the two cannot disagree.
// The S3 credentials (AWS_*) and the termination message path are named in package agentenv:
// the restore agent reads them alike.
const (
	EnvEndpoints    = "ETCD_ENDPOINTS"
	EnvCAFile       = "ETCD_CA_FILE"
	EnvCertFile     = "ETCD_CERT_FILE"
	EnvKeyFile      = "ETCD_KEY_FILE"
	EnvUsername     = "ETCD_USERNAME"
	EnvUsernameFile = "ETCD_USERNAME_FILE"
	EnvPassword     = "ETCD_PASSWORD"
	EnvPasswordFile = "ETCD_PASSWORD_FILE"
	EnvDialTimeout  = "ETCD_DIAL_TIMEOUT"

	EnvSnapshotName = "SNAPSHOT_NAME"
	EnvSnapshotUID  = "SNAPSHOT_UID"
	EnvTimeout      = "SNAPSHOT_TIMEOUT"
	EnvDestination  = "SNAPSHOT_DESTINATION"

	// EnvScheduleName and EnvScheduleUID identify the EtcdSnapshotSchedule that controls the
	// snapshot; both or neither. The agent records the UID with the artifact, the mark that
	// lets the schedule's retention prune it later (docs/backup-restore.md, "Retention").
	EnvScheduleName = "SNAPSHOT_SCHEDULE_NAME"
	EnvScheduleUID  = "SNAPSHOT_SCHEDULE_UID"
	// EnvRetentionKeepLast, EnvRetentionKeepDaily and EnvRetentionKeepWeekly are the
	// schedule's spec.retention (positive integers; at least one when any retention variable
	// is set), and EnvRetentionTimeZone its spec.timeZone (UTC when unset).
	EnvRetentionKeepLast   = "SNAPSHOT_RETENTION_KEEP_LAST"
	EnvRetentionKeepDaily  = "SNAPSHOT_RETENTION_KEEP_DAILY"
	EnvRetentionKeepWeekly = "SNAPSHOT_RETENTION_KEEP_WEEKLY"
	EnvRetentionTimeZone   = "SNAPSHOT_RETENTION_TIME_ZONE"

	EnvPVCDir     = "SNAPSHOT_PVC_DIR"
	EnvPVCClaim   = "SNAPSHOT_PVC_CLAIM"
	EnvPVCSubPath = "SNAPSHOT_PVC_SUBPATH"

	EnvS3Endpoint       = "SNAPSHOT_S3_ENDPOINT"
	EnvS3Bucket         = "SNAPSHOT_S3_BUCKET"
	EnvS3Key            = "SNAPSHOT_S3_KEY"
	EnvS3Region         = "SNAPSHOT_S3_REGION"
	EnvS3ForcePathStyle = "SNAPSHOT_S3_FORCE_PATH_STYLE"
	EnvS3CAFile         = "SNAPSHOT_S3_CA_FILE"
	// EnvS3CredentialsDir names a folder holding the files AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY: the credentials Secret mounted as a volume. Without it, the
	// variables of those names hold the credentials (agentenv.EnvAWSAccessKeyID).
	EnvS3CredentialsDir = "SNAPSHOT_S3_CREDENTIALS_DIR" //nolint:gosec // G101: the name of a variable, not a credential
)

// Defaults of the optional settings.
const (
	// DefaultDialTimeout bounds reaching a member that answers Status.
	DefaultDialTimeout = 10 * time.Second
	// DefaultTimeout bounds the whole run. It is shorter than the Job's activeDeadlineSeconds
	// (30 minutes), so that the agent, not the kubelet, ends a slow snapshot and reports why.
	DefaultTimeout = 25 * time.Minute
)

// Destination kinds, the values of EnvDestination.
const (
	DestinationS3  = "s3"
	DestinationPVC = "pvc"
)

// Config is the agent's validated environment.
type Config struct {
	// Endpoints are the etcd client URLs (voters only).
	Endpoints []string
	// CAFile verifies members' certificates; the system roots are used when it is empty.
	CAFile string
	// CertFile and KeyFile are the client certificate for mutual TLS; both or neither.
	CertFile, KeyFile string
	// Username and Password authenticate when etcd auth is on; Password needs Username.
	Username, Password agentenv.Credential
	// DialTimeout bounds reaching a member that answers.
	DialTimeout time.Duration

	// SnapshotName and SnapshotUID identify the EtcdSnapshot.
	SnapshotName, SnapshotUID string
	// Timeout bounds the whole run.
	Timeout time.Duration
	// Schedule is set when an EtcdSnapshotSchedule controls the snapshot.
	Schedule *ScheduleConfig

	// PVC is set for a PVC destination, S3 for an S3 one; exactly one is.
	PVC *PVCConfig
	S3  *S3Config

	// TerminationMessagePath receives the result.
	TerminationMessagePath string
}

// PVCConfig is a PVC destination: the claim is mounted at Dir.
type PVCConfig struct {
	// Dir is where the claim is mounted in the agent's container.
	Dir string
	// Claim is the claim's name, for the artifact URI.
	Claim string
	// SubPath is the folder under Dir, cleaned (CleanSubPath).
	SubPath string
}

// S3Config is an S3 destination: the store, and where in its bucket the artifact goes.
type S3Config struct {
	agentenv.S3Store
	// KeyPrefix places the object at ObjectKey(KeyPrefix, name).
	KeyPrefix string
}

// s3Vars are the variables of an S3 destination.
var s3Vars = agentenv.S3Vars{
	Endpoint: EnvS3Endpoint, Bucket: EnvS3Bucket, Region: EnvS3Region, ForcePathStyle: EnvS3ForcePathStyle,
	CAFile: EnvS3CAFile, CredentialsDir: EnvS3CredentialsDir, Role: "destination",
}

// ParseConfig reads and validates the agent's environment through lookup (os.LookupEnv in the
// agent). It reports every problem at once, each an *agentenv.ConfigError naming its variable,
// wrapped as a ReasonInvalidConfig failure.
func ParseConfig(lookup func(string) (string, bool)) (Config, error) {
	p := parser{agentenv.NewParser(lookup)}
	cfg := Config{
		Endpoints:              p.endpoints(),
		CAFile:                 p.Optional(EnvCAFile),
		CertFile:               p.Optional(EnvCertFile),
		KeyFile:                p.Optional(EnvKeyFile),
		Username:               p.Credential(EnvUsername, EnvUsernameFile),
		Password:               p.Credential(EnvPassword, EnvPasswordFile),
		DialTimeout:            p.Duration(EnvDialTimeout, DefaultDialTimeout, "10s or 25m"),
		SnapshotName:           p.Required(EnvSnapshotName),
		SnapshotUID:            p.Required(EnvSnapshotUID),
		Timeout:                p.Duration(EnvTimeout, DefaultTimeout, "10s or 25m"),
		Schedule:               p.schedule(),
		TerminationMessagePath: agentenv.TerminationMessagePath(lookup),
	}
	if cfg.SnapshotName != "" {
		if err := ValidateSnapshotName(cfg.SnapshotName); err != nil {
			p.Fail(EnvSnapshotName, "must be a Kubernetes object name (lowercase letters, digits, '-' and '.')")
		}
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		p.Fail(EnvCertFile, "and "+EnvKeyFile+" must be set together")
	}
	if cfg.Password.IsSet() && !cfg.Username.IsSet() {
		p.Fail(EnvUsername, "is required when a password is set")
	}
	switch dest := p.Required(EnvDestination); dest {
	case DestinationPVC:
		cfg.PVC = p.pvc()
	case DestinationS3:
		cfg.S3 = &S3Config{S3Store: p.S3Store(s3Vars), KeyPrefix: p.Optional(EnvS3Key)}
	case "":
	default:
		p.Fail(EnvDestination, fmt.Sprintf("must be %q or %q, not %q", DestinationS3, DestinationPVC, dest))
	}
	if err := p.Err(); err != nil {
		return Config{}, Fail(ReasonInvalidConfig, err)
	}
	return cfg, nil
}

// parser adds the snapshot agent's own variables to the shared reading.
type parser struct{ *agentenv.Parser }

func (p parser) endpoints() []string {
	raw := p.Required(EnvEndpoints)
	var out []string
	invalid := false
	for ep := range strings.SplitSeq(raw, ",") {
		ep = strings.TrimSpace(ep)
		if ep == "" {
			continue
		}
		if !agentenv.IsHTTPURL(ep) {
			p.Fail(EnvEndpoints, fmt.Sprintf("must list http:// or https:// URLs separated by commas; %q is not one", ep))
			invalid = true
			continue
		}
		out = append(out, ep)
	}
	if raw != "" && len(out) == 0 && !invalid {
		p.Fail(EnvEndpoints, "lists no endpoint")
	}
	return out
}

func (p parser) pvc() *PVCConfig {
	c := &PVCConfig{Dir: p.Required(EnvPVCDir), Claim: p.Required(EnvPVCClaim)}
	sub, err := CleanSubPath(p.Optional(EnvPVCSubPath))
	if err != nil {
		p.Fail(EnvPVCSubPath, "must be a relative folder inside the claim (no leading slash, no ..)")
	}
	c.SubPath = sub
	return c
}
