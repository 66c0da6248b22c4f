package agentenv

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

var testVars = S3Vars{
	Endpoint: "T_ENDPOINT", Bucket: "T_BUCKET", Region: "T_REGION", ForcePathStyle: "T_PATH_STYLE",
	CAFile: "T_CA_FILE", CredentialsDir: "T_CREDENTIALS_DIR", Role: "destination",
}

// problemVars lists the variables err's problems name.
func problemVars(t *testing.T, err error) []string {
	t.Helper()
	var names []string
	for _, e := range err.(Problems) { //nolint:errorlint // the concrete list is what is tested
		if ce, ok := errors.AsType[*ConfigError](e); ok {
			names = append(names, ce.Var)
		}
	}
	slices.Sort(names)
	return names
}

// TestS3Store reads a store with credentials from a folder or inline, and names every
// problem: missing settings, a bad URL or flag, credentials given both ways or not at all.
func TestS3Store(t *testing.T) {
	t.Parallel()
	base := map[string]string{"T_ENDPOINT": "https://rgw.example:8443", "T_BUCKET": "etcd", "T_CREDENTIALS_DIR": "/creds"}
	cases := []struct {
		name    string
		edit    func(env map[string]string)
		want    S3Store
		invalid []string
	}{
		{"credentials folder", func(map[string]string) {}, S3Store{
			Endpoint: "https://rgw.example:8443", Bucket: "etcd", Region: DefaultS3Region,
			AccessKeyID:     Credential{File: "/creds/AWS_ACCESS_KEY_ID"},
			SecretAccessKey: Credential{File: "/creds/AWS_SECRET_ACCESS_KEY"},
			SessionToken:    Credential{File: "/creds/AWS_SESSION_TOKEN"},
		}, nil},
		{"inline credentials", func(env map[string]string) {
			delete(env, "T_CREDENTIALS_DIR")
			env[EnvAWSAccessKeyID], env[EnvAWSSecretAccessKey] = " AKID ", "s3cr3t"
			env["T_REGION"], env["T_PATH_STYLE"], env["T_CA_FILE"] = "eu-1", "true", "/ca.crt"
		}, S3Store{
			Endpoint: "https://rgw.example:8443", Bucket: "etcd", Region: "eu-1", ForcePathStyle: true, CAFile: "/ca.crt",
			AccessKeyID: Credential{Value: "AKID"}, SecretAccessKey: Credential{Value: "s3cr3t"},
		}, nil},
		{"nothing", func(env map[string]string) { clear(env) }, S3Store{}, []string{EnvAWSAccessKeyID, "T_BUCKET", "T_ENDPOINT"}},
		{"blank inline secret", func(env map[string]string) {
			delete(env, "T_CREDENTIALS_DIR")
			env[EnvAWSAccessKeyID], env[EnvAWSSecretAccessKey] = "AKID", " "
		}, S3Store{}, []string{EnvAWSAccessKeyID}},
		{"both ways", func(env map[string]string) { env[EnvAWSSecretAccessKey] = "x" }, S3Store{}, []string{EnvAWSSecretAccessKey}},
		{"bad endpoint and flag", func(env map[string]string) { env["T_ENDPOINT"], env["T_PATH_STYLE"] = "rgw:8080", "yes please" },
			S3Store{}, []string{"T_ENDPOINT", "T_PATH_STYLE"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := maps.Clone(base)
			c.edit(env)
			p := NewParser(lookupIn(env))
			got := p.S3Store(testVars)
			if c.invalid != nil {
				if names := problemVars(t, p.Err()); !slices.Equal(names, c.invalid) {
					t.Errorf("variables named: %v, want %v (%v)", names, c.invalid, p.Err())
				}
				return
			}
			if err := p.Err(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("store (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTerminationMessagePath(t *testing.T) {
	t.Parallel()
	if got := TerminationMessagePath(lookupIn(nil)); got != DefaultTerminationMessagePath {
		t.Errorf("unset: %q", got)
	}
	if got := TerminationMessagePath(lookupIn(map[string]string{EnvTerminationMessagePath: "/tmp/result"})); got != "/tmp/result" {
		t.Errorf("set: %q", got)
	}
}
