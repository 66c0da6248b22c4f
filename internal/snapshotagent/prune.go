package snapshotagent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/go-logr/logr"

	"github.com/etcd-operator/etcd-operator/internal/agentio"
	"github.com/etcd-operator/etcd-operator/internal/retention"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// applyRetention prunes when the snapshot belongs to a schedule with a retention, and adds what
// it did to res. A failed prune is reported in res, never as the snapshot's failure: the
// artifact is stored, and the next run prunes again.
func (a *agent) applyRetention(ctx context.Context, log logr.Logger, res snapshot.Result) snapshot.Result {
	if a.cfg.Schedule == nil || a.cfg.Schedule.Retention == nil {
		return res
	}
	pruned, err := a.prune(ctx, log)
	res.Pruned, res.PrunedCount = pruned, len(pruned)
	if err != nil {
		res.PruneError = err.Error()
		log.Error(err, "pruning by the schedule's retention failed; the snapshot is stored", "pruned", len(pruned))
	}
	return res
}

// prune applies the schedule's retention once the snapshot is stored (docs/backup-restore.md,
// "Retention"): it lists the schedule's artifacts at the destination and deletes, oldest first,
// those no rule keeps. It returns the file names it deleted and why it stopped, if it did;
// the caller reports both and never fails the stored snapshot for them. Any doubt about what
// the destination holds (a listing or a mark that cannot be read) deletes nothing, since the
// rules counted over an incomplete listing could delete a file they should keep.
func (a *agent) prune(ctx context.Context, log logr.Logger) ([]string, error) {
	sc := a.cfg.Schedule
	r := sc.Retention
	// The zone database comes with the binary: internal/retention imports internal/cronslot,
	// which embeds time/tzdata, since the operator's image holds none.
	loc, err := time.LoadLocation(cmp.Or(r.TimeZone, "UTC"))
	if err != nil {
		return nil, fmt.Errorf("reading the schedule's time zone: %w", err)
	}
	owner := retention.Owner{Name: sc.Name, UID: sc.UID}
	found, err := a.dest.FindCandidates(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("listing the schedule's artifacts: %w", err)
	}
	policy := retention.Policy{KeepLast: r.KeepLast, KeepDaily: r.KeepDaily, KeepWeekly: r.KeepWeekly}
	var pruned []string
	for _, f := range owner.Expired(found, a.cfg.SnapshotName, policy, loc) {
		if err := a.dest.DeleteArtifact(ctx, f.Name); err != nil {
			return pruned, fmt.Errorf("pruning %s: %w", snapshot.ArtifactFileName(f.Name), err)
		}
		pruned = append(pruned, snapshot.ArtifactFileName(f.Name))
		log.Info("pruned an artifact of the schedule", "artifact", snapshot.ArtifactFileName(f.Name), "slot", f.Slot.Format(time.RFC3339))
	}
	return pruned, nil
}

// FindCandidates implements destination: the regular files <name>.db in the folder (symbolic
// links are never followed), with the UID their .schedule sibling records.
func (d *pvcDestination) FindCandidates(_ context.Context, owner retention.Owner) ([]retention.Found, error) {
	entries, err := os.ReadDir(d.folder)
	if err != nil {
		return nil, agentio.FSFailure("listing the snapshot folder", err)
	}
	var out []retention.Found
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), snapshot.ArtifactSuffix)
		if !ok || !e.Type().IsRegular() || !owner.Candidate(name) {
			continue
		}
		mark, err := os.ReadFile(filepath.Join(d.folder, e.Name()+snapshot.ScheduleSuffix))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, agentio.FSFailure("reading the "+snapshot.ScheduleSuffix+" file of "+e.Name(), err)
		}
		out = append(out, retention.Found{Name: name, ScheduleUID: strings.TrimSpace(string(mark))})
	}
	return out, nil
}

// DeleteArtifact implements destination: the artifact first, then its siblings, the marks
// last (snapshot.SiblingSuffixes), so that a prune cut short leaves at worst a few small
// siblings, never an artifact that lost its marks and with them the guard's and retention's
// knowledge of who wrote it.
func (d *pvcDestination) DeleteArtifact(_ context.Context, name string) error {
	artifact := filepath.Join(d.folder, snapshot.ArtifactFileName(name))
	for _, suffix := range append([]string{""}, snapshot.SiblingSuffixes...) {
		if err := os.Remove(artifact + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return agentio.FSFailure("deleting "+filepath.Base(artifact+suffix), err)
		}
	}
	return syncDir(d.folder)
}

// FindCandidates implements destination: the objects directly under the artifact's folder
// whose keys start with <schedule>-, each with the schedule UID its metadata records (one HEAD
// per candidate: a listing carries no metadata).
func (d *s3Destination) FindCandidates(ctx context.Context, owner retention.Owner) ([]retention.Found, error) {
	prefix := d.folder + owner.Name + "-"
	pages := s3.NewListObjectsV2Paginator(d.api, &s3.ListObjectsV2Input{Bucket: &d.bucket, Prefix: &prefix, Delimiter: aws.String("/")})
	var out []retention.Found
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, agentio.S3Failure("listing "+prefix+"*", err)
		}
		for _, obj := range page.Contents {
			key := aws.ToString(obj.Key)
			name, ok := strings.CutSuffix(strings.TrimPrefix(key, d.folder), snapshot.ArtifactSuffix)
			if !ok || !owner.Candidate(name) {
				continue
			}
			scheduleUID, found, err := d.scheduleMark(ctx, key)
			if err != nil {
				return nil, err
			}
			if found {
				out = append(out, retention.Found{Name: name, ScheduleUID: scheduleUID})
			}
		}
	}
	return out, nil
}

// scheduleMark reads the schedule UID an object records; found is false when the object is
// gone (deleted since it was listed).
func (d *s3Destination) scheduleMark(ctx context.Context, key string) (uid string, found bool, err error) {
	head, err := d.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &d.bucket, Key: &key})
	if agentio.HTTPStatus(err) == http.StatusNotFound {
		return "", false, nil
	}
	if err != nil {
		return "", false, agentio.S3Failure("reading the metadata of "+key, err)
	}
	return head.Metadata[snapshot.MetadataScheduleUID], true, nil
}

// DeleteArtifact implements destination: the object, then its .sha256 sidecar when the sidecar
// records the same schedule (an object of that name left by anything else stays).
func (d *s3Destination) DeleteArtifact(ctx context.Context, name string) error {
	key := d.folder + snapshot.ArtifactFileName(name)
	if _, err := d.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &d.bucket, Key: &key}); err != nil {
		return agentio.S3Failure("deleting "+key, err)
	}
	sidecar := key + snapshot.ChecksumSuffix
	uid, found, err := d.scheduleMark(ctx, sidecar)
	if err != nil || !found || uid == "" || uid != d.scheduleUID {
		return err
	}
	if _, err := d.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &d.bucket, Key: &sidecar}); err != nil {
		return agentio.S3Failure("deleting "+sidecar, err)
	}
	return nil
}
