package snapshotagent

import (
	"context"
	"crypto/sha256"
	"time"

	"github.com/go-logr/logr"

	"github.com/etcd-operator/etcd-operator/internal/agentio"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// agent takes one snapshot from etcd to one destination.
type agent struct {
	cfg  snapshot.Config
	log  logr.Logger
	dial etcdDialer
	dest destination
}

// Take takes the snapshot cfg describes: it connects to etcd and to the destination, streams the
// snapshot into the artifact and writes the sidecars. The returned error is a *snapshot.Failure
// with the reason (snapshot.ReasonOf); its text never holds a password or secret key.
func Take(ctx context.Context, cfg snapshot.Config, log logr.Logger) (snapshot.Result, error) {
	a, secrets, err := newAgent(cfg, log)
	if err != nil {
		return snapshot.Result{}, agentio.Redact(err, secrets)
	}
	res, err := a.run(ctx)
	res.PruneError = agentio.RedactString(res.PruneError, secrets)
	return res, agentio.Redact(err, secrets)
}

// newAgent reads the files cfg names (TLS material, credentials) and builds the clients.
func newAgent(cfg snapshot.Config, log logr.Logger) (*agent, []string, error) {
	dial, secrets, err := dialerFor(cfg)
	if err != nil {
		return nil, secrets, err
	}
	a := &agent{cfg: cfg, log: log, dial: dial}
	var scheduleUID string
	if cfg.Schedule != nil {
		scheduleUID = cfg.Schedule.UID
	}
	switch {
	case cfg.PVC != nil:
		a.dest = newPVCDestination(*cfg.PVC, cfg.SnapshotName, cfg.SnapshotUID, scheduleUID)
	case cfg.S3 != nil:
		client, s3Secrets, err := agentio.NewS3Client(cfg.S3.S3Store)
		secrets = append(secrets, s3Secrets...)
		if err != nil {
			return nil, secrets, err
		}
		a.dest = newS3Destination(client, *cfg.S3, cfg.SnapshotName, cfg.SnapshotUID, scheduleUID)
	default:
		return nil, secrets, snapshot.Failf(snapshot.ReasonInvalidConfig, "no destination configured")
	}
	return a, secrets, nil
}

// run checks the destination, picks a member, streams its snapshot into the destination and
// reports the artifact.
func (a *agent) run(ctx context.Context) (snapshot.Result, error) {
	if err := a.dest.Prepare(ctx); err != nil {
		return snapshot.Result{}, err
	}
	src, err := connect(ctx, a.dial, a.cfg.Endpoints, a.cfg.DialTimeout)
	if err != nil {
		return snapshot.Result{}, err
	}
	defer closeQuietly(src.api)
	before := src.status
	log := a.log.WithValues("memberID", etcdclient.FormatID(before.ID), "etcdVersion", before.Version)
	// The stream is the database file plus etcd's 32-byte hash.
	if err := a.dest.CheckRoom(before.DBSize + sha256.Size); err != nil {
		return snapshot.Result{}, err
	}
	log.Info("streaming snapshot", "dbSizeBytes", before.DBSize, "destination", a.dest.URI())

	// The stream's time runs from opening it, as `etcdctl snapshot save` counts its "took", to
	// the artifact and its checksum stored. Cancelling streamCtx ends the gRPC stream when run
	// returns early.
	start := time.Now()
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	rc, err := src.api.Snapshot(streamCtx, before.Endpoint)
	if err != nil {
		return snapshot.Result{}, snapshot.Failf(streamReason(err), "opening the snapshot stream: %w", err)
	}
	defer func() { _ = rc.Close() }()
	bounds := revisionBounds{before: before.Revision}
	if after, err := src.api.Status(ctx, before.Endpoint); err == nil && after.ID == before.ID {
		bounds.after = after.Revision
	}

	scanner := snapshot.NewRevisionScanner()
	stream := newVerifiedStream(rc, scanner)
	if err := a.dest.Store(ctx, stream, artifactInfo{EtcdVersion: before.Version}); err != nil {
		return snapshot.Result{}, err
	}
	if err := a.dest.StoreChecksum(ctx, stream.Sum()); err != nil {
		return snapshot.Result{}, err
	}
	elapsed := time.Since(start)
	res := snapshot.Result{
		URI:          a.dest.URI(),
		SizeBytes:    stream.Size(),
		Checksum:     snapshot.FormatChecksum(stream.Sum()),
		Revision:     bounds.pick(scanner.Revision()),
		EtcdVersion:  before.Version,
		StreamMillis: max(elapsed.Milliseconds(), 1),
	}
	log.Info("snapshot stored", "uri", res.URI, "sizeBytes", res.SizeBytes, "checksum", res.Checksum,
		"revision", res.Revision, "seconds", elapsed.Seconds(), "bytesPerSecond", int64(float64(res.SizeBytes)/max(elapsed.Seconds(), 1e-3)))
	return a.applyRetention(ctx, log, res), nil
}

// streamReason classifies a failure to open the snapshot stream.
func streamReason(err error) snapshot.Reason {
	if r := etcdReason(err); r == snapshot.ReasonEtcdAuthFailed {
		return r
	}
	return snapshot.ReasonSnapshotStreamFailed
}

// revisionBounds are the serving member's revisions just before the snapshot was requested and
// just after its stream opened: the snapshot holds every revision up to before and none after
// after (0 when unknown).
type revisionBounds struct {
	before, after int64
}

// pick returns the snapshot's revision: the one read from the database as it streamed,
// kept within the bounds (docs/backup-restore.md, "Revision").
func (b revisionBounds) pick(scanned int64) int64 {
	rev := max(scanned, b.before)
	if b.after > 0 {
		rev = min(rev, b.after)
	}
	return rev
}
