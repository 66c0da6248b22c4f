package etcdcluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdmember"
	"github.com/etcd-operator/etcd-operator/internal/desired"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/etcdview"
	"github.com/etcd-operator/etcd-operator/internal/health"
	"github.com/etcd-operator/etcd-operator/test/utils/wait"
)

// hashCanary is the value prefix of the keys whose stored bytes the test rewrites in one
// member's bbolt file; hashCanaryDiverged is what they become (same length, so bbolt's pages
// stay well-formed and etcd keeps serving, only with other data).
const (
	hashCanary         = "hash-canary-value"
	hashCanaryDiverged = "HASH-CANARY-VALUE"
)

// TestKeyspaceDivergenceNamedByHashAndReplaced runs three real etcd members under both
// controllers (docs/design/healing.md, "Keyspace hash comparison"). One member's keyspace is
// made to diverge for real: the values of some keys are rewritten in place in its bbolt file
// while it runs, behind etcd's back, so it keeps serving and no etcd check notices (the
// initial check runs only at start, the compaction check only after a compaction). The
// comparison must name that member, it must be replaced (removal-reason DataCorrupt, its ID
// gone from etcd, 3 members again), and every member must then serve the original values.
func TestKeyspaceDivergenceNamedByHashAndReplaced(t *testing.T) {
	t.Parallel()
	const name = "hashkv"
	w := newRealWorld(t)
	board := etcdview.NewBoard()
	w.memberOpts = append(w.memberOpts, etcdmember.WithEtcdViews(board))
	w.startController(etcdcluster.WithEtcdViews(board), etcdcluster.WithHashCheckInterval(time.Second))
	w.newCluster(name, 3)
	wait.Eventually(t, realConvergeTimeout, "bootstrap of 3 real members", w.converged(name, 3))
	ctx, cancel := context.WithTimeout(t.Context(), 3*realConvergeTimeout)
	defer cancel()

	cli := w.real.client(t)
	for i := range 20 {
		if _, err := cli.Put(ctx, fmt.Sprintf("hash/%02d", i), fmt.Sprintf("%s-%02d", hashCanary, i)); err != nil {
			t.Fatalf("writing key %d: %v", i, err)
		}
	}
	ms, err := w.members(ctx, name)
	if err != nil || len(ms) != 3 {
		t.Fatalf("members: %d, %v", len(ms), err)
	}
	victim := ms[1]
	victimID, err := etcdclient.ParseID(victim.Status.MemberID)
	if err != nil {
		t.Fatal(err)
	}
	db := w.real.dbFile(ctx, t, victim.Name)
	// etcd commits its backend every 100 ms: wait until the values are in the file.
	wait.Eventually(t, convergeTimeout, "the canary values in "+victim.Name+"'s bbolt file", func() error {
		n, err := rewriteInPlace(db, []byte(hashCanary), []byte(hashCanaryDiverged))
		if err == nil && n == 0 {
			err = fmt.Errorf("no canary value in %s yet: %w", db, errNotYet)
		}
		return err
	})

	wait.Eventually(t, realConvergeTimeout, victim.Name+" named by hash and replaced", func() error {
		if err := w.converged(name, 3)(); err != nil {
			return err
		}
		now, err := w.members(ctx, name)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(now, func(m etcdv1alpha2.EtcdMember) bool { return m.Name == victim.Name }) {
			return fmt.Errorf("%s is still an EtcdMember: %w", victim.Name, errNotYet)
		}
		if slices.ContainsFunc(w.real.snapshot(), func(e etcdclient.Member) bool { return e.ID == victimID }) {
			return fmt.Errorf("etcd still lists %s: %w", victim.Status.MemberID, errNotYet)
		}
		return nil
	})
	checkHashEvents(ctx, t, w, victim.Name)
	for _, m := range mustMembers(ctx, t, w, name) {
		mcli := w.real.clientOf(t, w.real.clientURL(name, m.Name))
		for i := range 20 {
			resp, err := mcli.Get(ctx, fmt.Sprintf("hash/%02d", i))
			if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != fmt.Sprintf("%s-%02d", hashCanary, i) {
				t.Errorf("member %s serves key %d as %v (%v), want the value written", m.Name, i, resp, err)
			}
		}
	}
}

// checkHashEvents asserts that the comparison announced the victim (KeyspaceDiverged, with the
// revision) and that it was removed as DataCorrupt.
func checkHashEvents(ctx context.Context, t *testing.T, w *world, victim string) {
	t.Helper()
	var list eventsv1.EventList
	if err := k8s.List(ctx, &list, client.InNamespace(w.ns)); err != nil {
		t.Fatal(err)
	}
	var diverged, removed bool
	for _, e := range list.Items {
		switch {
		case e.Reason == "KeyspaceDiverged" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, victim) &&
			strings.Contains(e.Note, "differs from the majority at revision"):
			diverged = true
		case e.Reason == "MemberRemoved" && strings.Contains(e.Note, victim) && strings.HasSuffix(e.Note, health.ReasonDataCorrupt):
			removed = true
		}
	}
	if !diverged || !removed {
		var notes []string
		for _, e := range list.Items {
			notes = append(notes, e.Reason+": "+e.Note)
		}
		t.Errorf("KeyspaceDiverged Event naming %s: %t; MemberRemoved as DataCorrupt by hash: %t; Events:\n%s", victim, diverged, removed, strings.Join(notes, "\n"))
	}
}

// mustMembers lists cluster's EtcdMembers or fails the test.
func mustMembers(ctx context.Context, t *testing.T, w *world, cluster string) []etcdv1alpha2.EtcdMember {
	t.Helper()
	ms, err := w.members(ctx, cluster)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// dbFile is the bbolt file (member/snap/db) of member's data volume.
func (r *realEtcd) dbFile(ctx context.Context, t *testing.T, member string) string {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: desired.PVCName(member)}, pvc); err != nil {
		t.Fatal(err)
	}
	var db string
	root := filepath.Join(r.dir, "pvc-"+string(pvc.UID))
	errFound := errors.New("found")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "db" && filepath.Base(filepath.Dir(path)) == "snap" {
			db = path
			return errFound
		}
		return err
	})
	if db == "" {
		t.Fatalf("no bbolt file under %s: %v", root, err)
	}
	return db
}

// rewriteInPlace overwrites every occurrence of old in file with repl (of the same length),
// without truncating or moving anything, and reports how many it rewrote. A running etcd maps
// the file shared, so it reads the new bytes at once.
func rewriteInPlace(file string, old, repl []byte) (int, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		return 0, err
	}
	n := 0
	for off := 0; ; {
		i := bytes.Index(data[off:], old)
		if i < 0 {
			break
		}
		if _, err := f.WriteAt(repl, int64(off+i)); err != nil {
			_ = f.Close()
			return n, err
		}
		n++
		off += i + len(old)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return n, err
	}
	return n, f.Close()
}
