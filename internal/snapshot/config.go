package snapshot

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Environment variables the snapshot Job sets for the agent (docs/backup-restore.md,
// "Environment"). The controller builds the Job from these names, so the two cannot disagree.
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
	// AWS_SECRET_ACCESS_KEY: the credentials Secret mounted as a volume.
	EnvS3CredentialsDir = "SNAPSHOT_S3_CREDENTIALS_DIR" //nolint:gosec // G101: the name of a variable, not a credential
	// EnvAWSAccessKeyID, EnvAWSSecretAccessKey and EnvAWSSessionToken are the alternative to
	// EnvS3CredentialsDir (the Secret's keys through envFrom); they are also the file names
	// looked up in that folder.
	EnvAWSAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvAWSSecretAccessKey = "AWS_SECRET_ACCESS_KEY" //nolint:gosec // G101: as above
	EnvAWSSessionToken    = "AWS_SESSION_TOKEN"     //nolint:gosec // G101: as above

	EnvTerminationMessagePath = "TERMINATION_MESSAGE_PATH"
)

// Defaults of the optional settings.
const (
	// DefaultDialTimeout bounds reaching a member that answers Status.
	DefaultDialTimeout = 10 * time.Second
	// DefaultTimeout bounds the whole run. It is shorter than the Job's activeDeadlineSeconds
	// (30 minutes), so that the agent, not the kubelet, ends a slow snapshot and reports why.
	DefaultTimeout = 25 * time.Minute
	// DefaultS3Region is used when the destination names none; S3-compatible stores accept any.
	DefaultS3Region = "us-east-1"
	// DefaultTerminationMessagePath is the kubelet's default terminationMessagePath.
	DefaultTerminationMessagePath = "/dev/termination-log"
)

// Destination kinds, the values of EnvDestination.
const (
	DestinationS3  = "s3"
	DestinationPVC = "pvc"
)

// Secret is a credential read from the environment. It prints as "[redacted]", so a Config
// logged or formatted by mistake does not carry it.
type Secret string

// String implements fmt.Stringer.
func (Secret) String() string { return "[redacted]" }

// GoString implements fmt.GoStringer.
func (Secret) GoString() string { return "[redacted]" }

// Credential is a value given either inline (an environment variable) or as a file to read,
// such as a mounted Secret key. At most one of the two is set.
type Credential struct {
	// Value is the inline value.
	Value Secret
	// File is the file that holds the value.
	File string
}

// IsSet reports whether either form is given.
func (c Credential) IsSet() bool { return c.Value != "" || c.File != "" }

// Config is the agent's validated environment.
type Config struct {
	// Endpoints are the etcd client URLs (voters only).
	Endpoints []string
	// CAFile verifies members' certificates; the system roots are used when it is empty.
	CAFile string
	// CertFile and KeyFile are the client certificate for mutual TLS; both or neither.
	CertFile, KeyFile string
	// Username and Password authenticate when etcd auth is on; Password needs Username.
	Username, Password Credential
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

// S3Config is an S3 destination.
type S3Config struct {
	// Endpoint is the store's URL (http or https).
	Endpoint string
	// Bucket and KeyPrefix place the object at ObjectKey(KeyPrefix, name).
	Bucket, KeyPrefix string
	// Region signs requests; DefaultS3Region when unset.
	Region string
	// ForcePathStyle puts the bucket in the URL path rather than the host name.
	ForcePathStyle bool
	// CAFile, when set, is the PEM bundle that verifies the endpoint's certificate instead of
	// the system roots.
	CAFile string
	// AccessKeyID, SecretAccessKey and SessionToken are the static credentials.
	AccessKeyID, SecretAccessKey, SessionToken Credential
}

// ConfigError names an environment variable and what is wrong with it.
type ConfigError struct {
	// Var is the environment variable.
	Var string
	// Problem says what is wrong, e.g. "is required".
	Problem string
}

func (e *ConfigError) Error() string { return e.Var + " " + e.Problem }

// ParseConfig reads and validates the agent's environment through lookup (os.LookupEnv in the
// agent). It reports every problem at once, each naming its variable, wrapped as a
// ReasonInvalidConfig failure.
func ParseConfig(lookup func(string) (string, bool)) (Config, error) {
	p := parser{lookup: lookup}
	cfg := Config{
		Endpoints:              p.endpoints(),
		CAFile:                 p.str(EnvCAFile),
		CertFile:               p.str(EnvCertFile),
		KeyFile:                p.str(EnvKeyFile),
		Username:               p.credential(EnvUsername, EnvUsernameFile),
		Password:               p.credential(EnvPassword, EnvPasswordFile),
		DialTimeout:            p.duration(EnvDialTimeout, DefaultDialTimeout),
		SnapshotName:           p.required(EnvSnapshotName),
		SnapshotUID:            p.required(EnvSnapshotUID),
		Timeout:                p.duration(EnvTimeout, DefaultTimeout),
		Schedule:               p.schedule(),
		TerminationMessagePath: p.str(EnvTerminationMessagePath),
	}
	if cfg.TerminationMessagePath == "" {
		cfg.TerminationMessagePath = DefaultTerminationMessagePath
	}
	if cfg.SnapshotName != "" {
		if err := ValidateSnapshotName(cfg.SnapshotName); err != nil {
			p.fail(EnvSnapshotName, "must be a Kubernetes object name (lowercase letters, digits, '-' and '.')")
		}
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		p.fail(EnvCertFile, "and "+EnvKeyFile+" must be set together")
	}
	if cfg.Password.IsSet() && !cfg.Username.IsSet() {
		p.fail(EnvUsername, "is required when a password is set")
	}
	switch dest := p.required(EnvDestination); dest {
	case DestinationPVC:
		cfg.PVC = p.pvc()
	case DestinationS3:
		cfg.S3 = p.s3()
	case "":
	default:
		p.fail(EnvDestination, fmt.Sprintf("must be %q or %q, not %q", DestinationS3, DestinationPVC, dest))
	}
	if len(p.errs) > 0 {
		return Config{}, Fail(ReasonInvalidConfig, configErrors(p.errs))
	}
	return cfg, nil
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

// Unwrap gives errors.As each *ConfigError.
func (e configErrors) Unwrap() []error { return e }

// parser collects every problem instead of stopping at the first, so one failed Job shows the
// whole list.
type parser struct {
	lookup func(string) (string, bool)
	errs   []error
}

func (p *parser) fail(name, problem string) {
	p.errs = append(p.errs, &ConfigError{Var: name, Problem: problem})
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
		p.fail(name, fmt.Sprintf("must be a positive duration such as 10s or 25m, not %q", v))
		return def
	}
	return d
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

// credential reads a value given inline or as a file. Inline values are not trimmed: a
// password may end in a space.
func (p *parser) credential(inline, file string) Credential {
	v, _ := p.lookup(inline)
	c := Credential{Value: Secret(v), File: p.str(file)}
	if c.Value != "" && c.File != "" {
		p.fail(inline, "and "+file+" must not both be set")
	}
	return c
}

func (p *parser) endpoints() []string {
	raw := p.required(EnvEndpoints)
	var out []string
	invalid := false
	for ep := range strings.SplitSeq(raw, ",") {
		ep = strings.TrimSpace(ep)
		if ep == "" {
			continue
		}
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.fail(EnvEndpoints, fmt.Sprintf("must list http:// or https:// URLs separated by commas; %q is not one", ep))
			invalid = true
			continue
		}
		out = append(out, ep)
	}
	if raw != "" && len(out) == 0 && !invalid {
		p.fail(EnvEndpoints, "lists no endpoint")
	}
	return out
}

func (p *parser) pvc() *PVCConfig {
	c := &PVCConfig{Dir: p.required(EnvPVCDir), Claim: p.required(EnvPVCClaim)}
	sub, err := CleanSubPath(p.str(EnvPVCSubPath))
	if err != nil {
		p.fail(EnvPVCSubPath, "must be a relative folder inside the claim (no leading slash, no ..)")
	}
	c.SubPath = sub
	return c
}

func (p *parser) s3() *S3Config {
	c := &S3Config{
		Endpoint:       p.required(EnvS3Endpoint),
		Bucket:         p.required(EnvS3Bucket),
		KeyPrefix:      p.str(EnvS3Key),
		Region:         p.str(EnvS3Region),
		ForcePathStyle: p.boolean(EnvS3ForcePathStyle),
		CAFile:         p.str(EnvS3CAFile),
	}
	if c.Region == "" {
		c.Region = DefaultS3Region
	}
	if c.Endpoint != "" {
		if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.fail(EnvS3Endpoint, fmt.Sprintf("must be an http:// or https:// URL, not %q", c.Endpoint))
		}
	}
	if dir := p.str(EnvS3CredentialsDir); dir != "" {
		for _, name := range []string{EnvAWSAccessKeyID, EnvAWSSecretAccessKey} {
			if v, _ := p.lookup(name); v != "" {
				p.fail(name, "must not be set together with "+EnvS3CredentialsDir)
			}
		}
		c.AccessKeyID = Credential{File: dir + "/" + EnvAWSAccessKeyID}
		c.SecretAccessKey = Credential{File: dir + "/" + EnvAWSSecretAccessKey}
		c.SessionToken = Credential{File: dir + "/" + EnvAWSSessionToken}
		return c
	}
	id, _ := p.lookup(EnvAWSAccessKeyID)
	secret, _ := p.lookup(EnvAWSSecretAccessKey)
	token, _ := p.lookup(EnvAWSSessionToken)
	if id == "" || secret == "" {
		p.fail(EnvAWSAccessKeyID, "and "+EnvAWSSecretAccessKey+" are required for an S3 destination (or "+EnvS3CredentialsDir+")")
	}
	c.AccessKeyID = Credential{Value: Secret(strings.TrimSpace(id))}
	c.SecretAccessKey = Credential{Value: Secret(strings.TrimSpace(secret))}
	c.SessionToken = Credential{Value: Secret(strings.TrimSpace(token))}
	return c
}
