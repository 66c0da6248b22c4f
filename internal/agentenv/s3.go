package agentenv

import (
	"fmt"
	"net/url"
)

// The variables both agents read inline S3 credentials from (the keys of the credentials Secret,
// through envFrom), and the names of the files they read in a credentials folder instead (the
// Secret mounted as a volume).
const (
	EnvAWSAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvAWSSecretAccessKey = "AWS_SECRET_ACCESS_KEY" //nolint:gosec // G101: the name of a variable, not a credential
	EnvAWSSessionToken    = "AWS_SESSION_TOKEN"     //nolint:gosec // G101: as above
)

// DefaultS3Region is used when the store names none; S3-compatible stores accept any.
const DefaultS3Region = "us-east-1"

// S3Store is how to reach an S3-compatible store: where it is, which bucket, and with which
// credentials. Where in the bucket is each agent's own (a key prefix, an exact key).
type S3Store struct {
	// Endpoint is the store's URL (http or https).
	Endpoint string
	// Bucket holds the artifacts.
	Bucket string
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

// S3Vars names the variables an agent reads an S3Store from: each agent has its own prefix
// (SNAPSHOT_S3_, RESTORE_S3_); the AWS_* credentials variables are the same for both.
type S3Vars struct {
	Endpoint, Bucket, Region, ForcePathStyle, CAFile string
	// CredentialsDir names a folder holding the files EnvAWSAccessKeyID, EnvAWSSecretAccessKey
	// and, optionally, EnvAWSSessionToken; without it the AWS_* variables hold the values.
	CredentialsDir string
	// Role is what the store is to the agent, "destination" or "source", for problems.
	Role string
}

// S3Store reads the store's settings from the variables vars names.
func (p *Parser) S3Store(vars S3Vars) S3Store {
	s := S3Store{
		Endpoint:       p.Required(vars.Endpoint),
		Bucket:         p.Required(vars.Bucket),
		Region:         p.Optional(vars.Region),
		ForcePathStyle: p.Bool(vars.ForcePathStyle),
		CAFile:         p.Optional(vars.CAFile),
	}
	if s.Region == "" {
		s.Region = DefaultS3Region
	}
	if s.Endpoint != "" && !IsHTTPURL(s.Endpoint) {
		p.Fail(vars.Endpoint, fmt.Sprintf("must be an http:// or https:// URL, not %q", s.Endpoint))
	}
	s.AccessKeyID, s.SecretAccessKey, s.SessionToken = p.s3Credentials(vars)
	return s
}

// s3Credentials reads the credentials from the folder vars.CredentialsDir names, or else from
// the AWS_* variables; setting both is refused, since the agent could honour only one.
func (p *Parser) s3Credentials(vars S3Vars) (id, secret, token Credential) {
	if dir := p.Optional(vars.CredentialsDir); dir != "" {
		for _, name := range []string{EnvAWSAccessKeyID, EnvAWSSecretAccessKey} {
			if p.Raw(name) != "" {
				p.Fail(name, "must not be set together with "+vars.CredentialsDir)
			}
		}
		return Credential{File: dir + "/" + EnvAWSAccessKeyID}, Credential{File: dir + "/" + EnvAWSSecretAccessKey},
			Credential{File: dir + "/" + EnvAWSSessionToken}
	}
	id = Credential{Value: Secret(p.Optional(EnvAWSAccessKeyID))}
	secret = Credential{Value: Secret(p.Optional(EnvAWSSecretAccessKey))}
	token = Credential{Value: Secret(p.Optional(EnvAWSSessionToken))}
	if id.Value == "" || secret.Value == "" {
		p.Fail(EnvAWSAccessKeyID, "and "+EnvAWSSecretAccessKey+" are required for an S3 "+vars.Role+" (or "+vars.CredentialsDir+")")
	}
	return id, secret, token
}

// IsHTTPURL reports whether s is an absolute http:// or https:// URL with a host.
func IsHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
