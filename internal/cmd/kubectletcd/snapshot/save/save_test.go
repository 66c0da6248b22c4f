package save_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/etcdobserve/etcdobservetest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/golden"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/snapshot/save"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

// stream is a snapshot stream as etcd sends it: the database, then its SHA-256.
func stream(db []byte) []byte {
	sum := sha256.Sum256(db)
	return append(slices.Clone(db), sum[:]...)
}

var db = bytes.Repeat([]byte("etcd-bbolt-page."), 5000)

func env(t *testing.T, f *etcdobservetest.Fixture) *invocationtest.Env {
	t.Helper()
	e := f.Env(t)
	e.Etcd.SnapshotData = stream(db)
	return e
}

func run(e *invocationtest.Env, o save.Options) error {
	o.Cluster = etcdobservetest.Cluster
	return save.Run(context.Background(), o, e.Deps)
}

// entries lists dir, to show that no temporary file is left behind.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

func TestSaveWritesTheFileAndItsDigest(t *testing.T) {
	for _, format := range []string{invocation.OutputText, invocation.OutputJSON} {
		dir := t.TempDir()
		file := filepath.Join(dir, "demo.db")
		e := env(t, etcdobservetest.ThreeMembers())
		e.Deps.Globals.Output = format
		if err := run(e, save.Options{File: file}); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(file)
		if err != nil || !bytes.Equal(got, stream(db)) {
			t.Fatalf("file holds %d bytes (%v), want the %d streamed", len(got), err, len(stream(db)))
		}
		sum := sha256.Sum256(got)
		digest, err := os.ReadFile(file + ".sha256")
		if want := hex.EncodeToString(sum[:]) + "  demo.db\n"; err != nil || string(digest) != want {
			t.Errorf("digest file %q (%v), want %q", digest, err, want)
		}
		if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("file mode %v (%v), want 0600", fi.Mode().Perm(), err)
		}
		if got := entries(t, dir); !slices.Equal(got, []string{"demo.db", "demo.db.sha256"}) {
			t.Errorf("folder holds %v", got)
		}
		if !slices.Contains(e.Etcd.Calls, "Snapshot "+invocationtest.Endpoint("demo-a")) {
			t.Errorf("did not stream from the leader demo-a: %v", e.Etcd.Calls)
		}
		golden.Check(t, "save."+format, bytes.ReplaceAll(e.Out.Bytes(), []byte(dir), []byte("DIR")))
	}
}

func TestSaveFromAnotherVoterWhenTheLeaderIsNotReady(t *testing.T) {
	f := etcdobservetest.ThreeMembers()
	f.SetPodReady("demo-a", false)
	e := env(t, f)
	if err := run(e, save.Options{File: filepath.Join(t.TempDir(), "demo.db")}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(e.Etcd.Calls, "Snapshot "+invocationtest.Endpoint("demo-b")) {
		t.Errorf("did not stream from demo-b: %v", e.Etcd.Calls)
	}
}

func TestSaveFromTheNamedMember(t *testing.T) {
	e := env(t, etcdobservetest.ThreeMembers())
	if err := run(e, save.Options{File: filepath.Join(t.TempDir(), "demo.db"), Member: "demo-c"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(e.Etcd.Calls, "Snapshot "+invocationtest.Endpoint("demo-c")) {
		t.Errorf("did not stream from demo-c: %v", e.Etcd.Calls)
	}
}

func TestLearnerOrUnknownMemberIsAUsageError(t *testing.T) {
	f := etcdobservetest.ThreeMembers()
	f.EtcdMembers[slices.IndexFunc(f.EtcdMembers, func(m etcdclient.Member) bool { return m.Name == "demo-c" })].IsLearner = true
	for _, m := range []string{"demo-c", "demo-z"} {
		err := run(env(t, f), save.Options{File: filepath.Join(t.TempDir(), "demo.db"), Member: m})
		if invocation.Code(err) != invocation.ExitUsage {
			t.Errorf("--member %s: got %v (exit %d), want exit 2", m, err, invocation.Code(err))
		}
	}
}

func TestExistingFileIsRefusedWithExit3(t *testing.T) {
	for _, existing := range []string{"demo.db", "demo.db.sha256"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, existing), []byte("keep me"), 0o600); err != nil {
			t.Fatal(err)
		}
		e := env(t, etcdobservetest.ThreeMembers())
		err := run(e, save.Options{File: filepath.Join(dir, "demo.db")})
		if invocation.Code(err) != invocation.ExitRefused || !strings.Contains(err.Error(), save.RuleFileExists) || !strings.Contains(err.Error(), "--force") {
			t.Fatalf("%s exists: got %v (exit %d), want exit 3 by %s", existing, err, invocation.Code(err), save.RuleFileExists)
		}
		if len(e.Etcd.Calls) != 0 {
			t.Errorf("a refused save reached etcd: %v", e.Etcd.Calls)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, existing)); string(got) != "keep me" {
			t.Errorf("a refused save changed %s", existing)
		}
	}
}

func TestForceReplaces(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "demo.db")
	for _, p := range []string{file, file + ".sha256"} {
		if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := run(env(t, etcdobservetest.ThreeMembers()), save.Options{File: file, Force: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(file); !bytes.Equal(got, stream(db)) {
		t.Errorf("--force did not replace the file")
	}
}

func TestBrokenStreamLeavesTheFileAsItWas(t *testing.T) {
	cut := stream(db)
	cut = cut[:len(cut)-1000] // a stream that broke off: its last 32 bytes are not the hash
	for name, setup := range map[string]func(e *invocationtest.Env){
		"cut short":   func(e *invocationtest.Env) { e.Etcd.SnapshotData = cut },
		"call failed": func(e *invocationtest.Env) { e.Etcd.Errs = map[string]error{"Snapshot": errors.New("member stopped")} },
	} {
		dir := t.TempDir()
		file := filepath.Join(dir, "demo.db")
		if err := os.WriteFile(file, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		e := env(t, etcdobservetest.ThreeMembers())
		setup(e)
		err := run(e, save.Options{File: file, Force: true})
		if invocation.Code(err) != invocation.ExitError {
			t.Errorf("%s: got %v (exit %d), want exit 1", name, err, invocation.Code(err))
		}
		if got, _ := os.ReadFile(file); string(got) != "old" {
			t.Errorf("%s: the file was changed", name)
		}
		if got := entries(t, dir); !slices.Equal(got, []string{"demo.db"}) {
			t.Errorf("%s: folder holds %v, want the old file only", name, got)
		}
	}
}

func TestMissingFolderIsAUsageError(t *testing.T) {
	err := run(env(t, etcdobservetest.ThreeMembers()), save.Options{File: filepath.Join(t.TempDir(), "no", "demo.db")})
	if invocation.Code(err) != invocation.ExitUsage {
		t.Fatalf("got %v (exit %d), want exit 2", err, invocation.Code(err))
	}
}
