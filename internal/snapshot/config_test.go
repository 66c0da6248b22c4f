package snapshot

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/etcd-operator/etcd-operator/internal/agentenv"
)

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

func pvcEnv() map[string]string {
	return map[string]string{
		EnvEndpoints:    "https://c-client.ns.svc:2379, https://10.0.0.2:2379",
		EnvSnapshotName: "nightly",
		EnvSnapshotUID:  "0b7c3d9e-uid",
		EnvDestination:  DestinationPVC,
		EnvPVCDir:       "/snapshots",
		EnvPVCClaim:     "backups",
		EnvPVCSubPath:   "etcd/",
	}
}

func TestParseConfigPVCWithDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig(lookupIn(pvcEnv()))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Endpoints:              []string{"https://c-client.ns.svc:2379", "https://10.0.0.2:2379"},
		DialTimeout:            10 * time.Second,
		SnapshotName:           "nightly",
		SnapshotUID:            "0b7c3d9e-uid",
		Timeout:                25 * time.Minute,
		PVC:                    &PVCConfig{Dir: "/snapshots", Claim: "backups", SubPath: "etcd"},
		TerminationMessagePath: "/dev/termination-log",
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

func TestParseConfigS3AndCredentials(t *testing.T) {
	t.Parallel()
	env := pvcEnv()
	delete(env, EnvPVCDir)
	env[EnvDestination] = DestinationS3
	env[EnvS3Endpoint] = "https://rgw.example:8443"
	env[EnvS3Bucket] = "etcd"
	env[EnvS3Key] = "prod/"
	env[EnvS3ForcePathStyle] = "true"
	env[EnvS3CAFile] = "/etc/s3/ca.crt"
	env[EnvS3CredentialsDir] = "/etc/s3/creds"
	env[EnvCAFile], env[EnvCertFile], env[EnvKeyFile] = "/tls/ca.crt", "/tls/tls.crt", "/tls/tls.key"
	env[EnvUsername], env[EnvPasswordFile] = "root", "/auth/password"
	env[EnvDialTimeout], env[EnvTimeout] = "3s", "10m"
	env[agentenv.EnvTerminationMessagePath] = "/tmp/result"
	cfg, err := ParseConfig(lookupIn(env))
	if err != nil {
		t.Fatal(err)
	}
	wantS3 := &S3Config{KeyPrefix: "prod/", S3Store: agentenv.S3Store{
		Endpoint: "https://rgw.example:8443", Bucket: "etcd", Region: "us-east-1",
		ForcePathStyle: true, CAFile: "/etc/s3/ca.crt",
		AccessKeyID:     agentenv.Credential{File: "/etc/s3/creds/AWS_ACCESS_KEY_ID"},
		SecretAccessKey: agentenv.Credential{File: "/etc/s3/creds/AWS_SECRET_ACCESS_KEY"},
		SessionToken:    agentenv.Credential{File: "/etc/s3/creds/AWS_SESSION_TOKEN"},
	}}
	if diff := cmp.Diff(wantS3, cfg.S3); diff != "" {
		t.Errorf("S3 config (-want +got):\n%s", diff)
	}
	if cfg.PVC != nil || cfg.DialTimeout != 3*time.Second || cfg.Timeout != 10*time.Minute ||
		cfg.Password.File != "/auth/password" || cfg.Username.Value != "root" || cfg.TerminationMessagePath != "/tmp/result" {
		t.Errorf("config = %+v", cfg)
	}

	// Inline credentials, e.g. from envFrom: the Secret's keys are the variable names.
	delete(env, EnvS3CredentialsDir)
	env[agentenv.EnvAWSAccessKeyID], env[agentenv.EnvAWSSecretAccessKey] = "AKID", "s3cr3t"
	cfg, err = ParseConfig(lookupIn(env))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.S3.AccessKeyID.Value != "AKID" || cfg.S3.SecretAccessKey.Value != "s3cr3t" {
		t.Errorf("inline credentials not read: %+v", cfg.S3)
	}
	if printed := fmt.Sprintf("%v %+v %#v", cfg.S3, *cfg.S3, *cfg.S3); strings.Contains(printed, "s3cr3t") {
		t.Errorf("a printed config shows the secret: %s", printed)
	}
}

// TestParseConfigNamesEveryBadVariable: one failed Job shows every problem, each by name.
func TestParseConfigNamesEveryBadVariable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		edit func(env map[string]string)
		want []string // variables named
	}{
		{"empty environment", func(env map[string]string) { clear(env) },
			[]string{EnvEndpoints, EnvSnapshotName, EnvSnapshotUID, EnvDestination}},
		{"bad endpoint", func(env map[string]string) { env[EnvEndpoints] = "c-client:2379" }, []string{EnvEndpoints}},
		{"only commas", func(env map[string]string) { env[EnvEndpoints] = " , " }, []string{EnvEndpoints}},
		{"name with a slash", func(env map[string]string) { env[EnvSnapshotName] = "../x" }, []string{EnvSnapshotName}},
		{"cert without key", func(env map[string]string) { env[EnvCertFile] = "/c" }, []string{EnvCertFile}},
		{"password without user", func(env map[string]string) { env[EnvPassword] = "pw" }, []string{EnvUsername}},
		{"password twice", func(env map[string]string) {
			env[EnvUsername], env[EnvPassword], env[EnvPasswordFile] = "root", "pw", "/pw"
		}, []string{EnvPassword}},
		{"bad durations", func(env map[string]string) { env[EnvDialTimeout], env[EnvTimeout] = "10", "-1m" },
			[]string{EnvDialTimeout, EnvTimeout}},
		{"unknown destination", func(env map[string]string) { env[EnvDestination] = "gcs" }, []string{EnvDestination}},
		{"pvc without mount", func(env map[string]string) { delete(env, EnvPVCDir); delete(env, EnvPVCClaim) },
			[]string{EnvPVCDir, EnvPVCClaim}},
		{"escaping subPath", func(env map[string]string) { env[EnvPVCSubPath] = "../other" }, []string{EnvPVCSubPath}},
		{"s3 without anything", func(env map[string]string) { env[EnvDestination] = DestinationS3 },
			[]string{EnvS3Endpoint, EnvS3Bucket, agentenv.EnvAWSAccessKeyID}},
		{"s3 bad endpoint and flag", func(env map[string]string) {
			env[EnvDestination], env[EnvS3Endpoint], env[EnvS3Bucket] = DestinationS3, "rgw:8080", "b"
			env[EnvS3ForcePathStyle], env[EnvS3CredentialsDir], env[agentenv.EnvAWSSecretAccessKey] = "yes please", "/creds", "x"
		}, []string{EnvS3Endpoint, EnvS3ForcePathStyle, agentenv.EnvAWSSecretAccessKey}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := pvcEnv()
			c.edit(env)
			_, err := ParseConfig(lookupIn(env))
			if ReasonOf(err) != ReasonInvalidConfig {
				t.Fatalf("ParseConfig = %v, want an InvalidConfig failure", err)
			}
			var named []string
			for _, e := range err.(*Failure).Err.(agentenv.Problems) { //nolint:errorlint // the concrete list is what is tested
				var ce *agentenv.ConfigError
				if errors.As(e, &ce) {
					named = append(named, ce.Var)
				}
			}
			slices.Sort(named)
			want := slices.Clone(c.want)
			slices.Sort(want)
			if !slices.Equal(named, want) {
				t.Errorf("variables named: %v, want %v (error: %v)", named, want, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("message spans lines: %q", err)
			}
		})
	}
}
