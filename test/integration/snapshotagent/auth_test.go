package snapshotagent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/snapshot"
	"github.com/etcd-operator/etcd-operator/test/utils/agentrun"
	"github.com/etcd-operator/etcd-operator/test/utils/etcdproc"
)

// TestSnapshotOverMTLSWithAuth snapshots a cluster that requires client certificates and has
// auth on (issue #10's setup), as root with the password from a file; a wrong password and a
// user without the root role are refused with EtcdAuthFailed (exit 2), and a CA file that does
// not exist is InvalidConfig.
func TestSnapshotOverMTLSWithAuth(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c := startCluster(ctx, t, "3.6", etcdproc.Options{TLS: true})
	const rootPassword, readerPassword = "root-Pw-1", "reader-Pw-2" //nolint:gosec // G101: throw-away test passwords
	setup := client(t, c, "", "")
	for _, step := range []func() error{
		func() error { _, err := setup.UserAdd(ctx, "root", rootPassword); return err },
		func() error { _, err := setup.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := setup.UserAdd(ctx, "reader", readerPassword); return err },
		func() error { _, err := setup.Put(ctx, "secret", "data"); return err },
		func() error { _, err := setup.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	secrets := t.TempDir()
	writeSecret := func(name, value string) string {
		p := filepath.Join(secrets, name)
		if err := os.WriteFile(p, []byte(value+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := func(user, password string) map[string]string {
		e := pvcEnv(c, t.TempDir(), "secure", "uid-secure")
		e[snapshot.EnvCAFile], e[snapshot.EnvCertFile], e[snapshot.EnvKeyFile] = c.PKI.CAFile, c.PKI.ClientCertFile, c.PKI.ClientKeyFile
		e[snapshot.EnvUsername], e[snapshot.EnvPasswordFile] = user, writeSecret(user+"-password", password)
		return e
	}

	ok := env("root", rootPassword)
	code, res := agentrun.Snapshot(ctx, t, ok)
	if code != 0 {
		t.Fatalf("snapshot over mTLS with auth: %+v", res)
	}
	checkArtifact(t, artifactPath(ok, "secure"), res)
	if st := snapshotStatus(t, "3.6", artifactPath(ok, "secure")); st.Revision != res.Revision {
		t.Errorf("etcdutl says revision %d, the agent %d", st.Revision, res.Revision)
	}

	for name, e := range map[string]map[string]string{
		"wrong password":    env("root", "wrong"),
		"user without root": env("reader", readerPassword),
	} {
		code, res := agentrun.Snapshot(ctx, t, e)
		if code != snapshot.ExitPermanent || res.Reason != snapshot.ReasonEtcdAuthFailed {
			t.Errorf("%s: exit %d, %+v; want EtcdAuthFailed", name, code, res)
		}
	}
	missingCA := env("root", rootPassword)
	missingCA[snapshot.EnvCAFile] = filepath.Join(secrets, "absent.crt")
	if code, res := agentrun.Snapshot(ctx, t, missingCA); res.Reason != snapshot.ReasonInvalidConfig || code != snapshot.ExitPermanent {
		t.Errorf("missing CA file: exit %d, %+v; want InvalidConfig", code, res)
	}
}
