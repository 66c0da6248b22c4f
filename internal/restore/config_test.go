package restore

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/agentenv"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

func lookupOf(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func baseEnv() map[string]string {
	return map[string]string{ //nolint:gosec // G101: variable names and a cluster token, no credential
		EnvDataDir:        "/var/lib/etcd",
		EnvName:           "main-x7k2p",
		EnvInitialCluster: "main-x7k2p=http://main-x7k2p.main.prod.svc:2380",
		EnvClusterToken:   "prod-main-uid",
		EnvPeerURL:        "http://main-x7k2p.main.prod.svc:2380",
		EnvEtcdVersion:    "3.6.16",
	}
}

// TestParseConfig reads both sources and the defaults.
func TestParseConfig(t *testing.T) {
	t.Parallel()
	env := baseEnv()
	env[EnvSource] = SourcePVC
	env[EnvPVCDir], env[EnvPVCClaim], env[EnvPVCPath] = "/restore-source", "backups", "./etcd/nightly.db"
	cfg, err := ParseConfig(lookupOf(env))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PVC == nil || cfg.PVC.Path != "etcd/nightly.db" || cfg.Timeout != DefaultTimeout || cfg.URI() != "pvc://backups/etcd/nightly.db" ||
		cfg.TerminationMessagePath != agentenv.DefaultTerminationMessagePath {
		t.Errorf("PVC config: %+v", cfg)
	}

	env = baseEnv()
	env[EnvSource], env[EnvS3Endpoint], env[EnvS3Bucket], env[EnvS3Key] = SourceS3, "https://s3.example.net", "b", "prod/nightly.db"
	env[EnvS3CredentialsDir], env[EnvChecksum], env[EnvS3ForcePathStyle] = "/etc/etcd-restore/s3-credentials", sumA, "true"
	cfg, err = ParseConfig(lookupOf(env))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.S3 == nil || cfg.S3.Key != "prod/nightly.db" || !cfg.S3.Store.ForcePathStyle || cfg.S3.Store.Region != agentenv.DefaultS3Region ||
		cfg.S3.Store.SecretAccessKey.File != "/etc/etcd-restore/s3-credentials/AWS_SECRET_ACCESS_KEY" || cfg.Checksum != sumA ||
		cfg.URI() != "s3://b/prod/nightly.db" {
		t.Errorf("S3 config: %+v", cfg)
	}
	if s := fmt.Sprintf("%+v %#v", cfg, cfg); strings.Contains(s, "AKID") {
		t.Error("credentials printed")
	}
}

// TestParseConfigNamesEveryProblem: one failed run lists every bad variable.
func TestParseConfigNamesEveryProblem(t *testing.T) {
	t.Parallel()
	env := baseEnv()
	env[EnvDataDir] = "relative"
	env[EnvPeerURL] = "main:2380"
	env[EnvEtcdVersion] = "3.6"
	env[EnvChecksum] = "md5:x"
	env[EnvSource] = SourceS3
	env[EnvS3Key] = "prod/"
	_, err := ParseConfig(lookupOf(env))
	if snapshot.ReasonOf(err) != snapshot.ReasonInvalidConfig {
		t.Fatalf("ParseConfig = %v, want InvalidConfig", err)
	}
	var bad []string
	for _, e := range err.(*snapshot.Failure).Err.(agentenv.Problems) { //nolint:errorlint // the concrete list is what is tested
		var ce *agentenv.ConfigError
		if errors.As(e, &ce) {
			bad = append(bad, ce.Var)
		}
	}
	for _, v := range []string{EnvDataDir, EnvPeerURL, EnvInitialCluster, EnvEtcdVersion, EnvChecksum, EnvS3Endpoint, EnvS3Bucket, EnvS3Key, agentenv.EnvAWSAccessKeyID} {
		if !strings.Contains(strings.Join(bad, ","), v) {
			t.Errorf("%s not named in %q", v, bad)
		}
	}
	if _, err := ParseConfig(lookupOf(map[string]string{})); !strings.Contains(fmt.Sprint(err), EnvSource+" is required") {
		t.Errorf("empty environment: %v", err)
	}
}
