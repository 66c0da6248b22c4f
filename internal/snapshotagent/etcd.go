package snapshotagent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/agentio"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// etcdAPI is the part of etcd the agent uses. *etcdclient.Conn implements it; tests use fakes.
type etcdAPI interface {
	// Status returns the status of the member serving endpoint.
	Status(ctx context.Context, endpoint string) (etcdclient.Status, error)
	// Snapshot opens the snapshot stream of the member serving endpoint.
	Snapshot(ctx context.Context, endpoint string) (io.ReadCloser, error)
	// Close releases the connections.
	Close() error
}

// etcdDialer connects to the cluster; the agent calls it again while the dial timeout lasts.
type etcdDialer func(ctx context.Context) (etcdAPI, error)

// Status rounds while no member answers yet start statusPollFirst apart, right after the dial
// (a connection that is not up yet fails a Status at once), and back off to statusPollMax.
const (
	statusPollFirst = 20 * time.Millisecond
	statusPollMax   = 500 * time.Millisecond
)

// streamWindow caps how much of the snapshot stream gRPC buffers when the destination takes
// it more slowly than etcd sends it, as an S3 upload often does: gRPC's own window grows with
// the measured bandwidth-delay product up to 16 MiB. 1 MiB still covers 10 Gbit/s at 0.8 ms of
// round trip, more than a cluster network's.
const streamWindow = 1 << 20

// source is the member chosen to serve the snapshot, as it answered Status.
type source struct {
	api    etcdAPI
	status etcdclient.Status
}

// connect dials etcd and finds a member that answers Status, retrying both until dialTimeout
// passes. Rejected credentials end the wait at once: they will not get better.
func connect(ctx context.Context, dial etcdDialer, endpoints []string, dialTimeout time.Duration) (source, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	var api etcdAPI
	var lastErr error
	for wait := statusPollFirst; ; wait = min(2*wait, statusPollMax) {
		if api == nil {
			api, lastErr = dial(ctx)
		}
		if api != nil {
			var st etcdclient.Status
			st, lastErr = pickMember(ctx, api, endpoints)
			if lastErr == nil {
				return source{api: api, status: st}, nil
			}
		}
		if reason := etcdReason(lastErr); reason == snapshot.ReasonEtcdAuthFailed {
			closeQuietly(api)
			return source{}, snapshot.Fail(reason, lastErr)
		}
		select {
		case <-ctx.Done():
			closeQuietly(api)
			if lastErr == nil {
				lastErr = ctx.Err()
			}
			return source{}, snapshot.Failf(snapshot.ReasonEtcdUnreachable, "no etcd endpoint answered within %s: %w", dialTimeout, lastErr)
		case <-time.After(wait):
		}
	}
}

// pickMember asks every endpoint for its Status and prefers a follower: streaming a large
// database costs the serving member disk reads and network, and the leader has the most else to
// do. A learner is never chosen: it may lag behind the voters. The leader serves when no
// follower answers.
func pickMember(ctx context.Context, api etcdAPI, endpoints []string) (etcdclient.Status, error) {
	var leader *etcdclient.Status
	var errs []error
	for _, ep := range endpoints {
		st, err := api.Status(ctx, ep)
		switch {
		case err != nil:
			errs = append(errs, err)
		case st.IsLearner:
			errs = append(errs, fmt.Errorf("member %s is a learner", etcdclient.FormatID(st.ID)))
		case st.IsLeader():
			leader = &st
		default:
			return st, nil
		}
	}
	if leader != nil {
		return *leader, nil
	}
	return etcdclient.Status{}, errors.Join(errs...)
}

// etcdReason maps an etcd error to the agent's reason.
func etcdReason(err error) snapshot.Reason {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, etcdclient.ErrAuthFailed), errors.Is(err, etcdclient.ErrPermissionDenied),
		errors.Is(err, etcdclient.ErrAuthRequired):
		return snapshot.ReasonEtcdAuthFailed
	default:
		return snapshot.ReasonEtcdUnreachable
	}
}

func closeQuietly(api etcdAPI) {
	if api != nil {
		_ = api.Close()
	}
}

// dialerFor builds the dialer of cfg: TLS material and credentials are read once, here, so that
// a missing file fails the run as InvalidConfig before any connection is tried.
func dialerFor(cfg snapshot.Config) (etcdDialer, []string, error) {
	tlsCfg, digest, err := etcdTLS(cfg)
	if err != nil {
		return nil, nil, snapshot.Fail(snapshot.ReasonInvalidConfig, err)
	}
	username, err := agentio.ReadCredential(cfg.Username, snapshot.EnvUsernameFile, false)
	if err != nil {
		return nil, nil, err
	}
	password, err := agentio.ReadCredential(cfg.Password, snapshot.EnvPasswordFile, false)
	if err != nil {
		return nil, nil, err
	}
	conf := etcdclient.Config{
		Endpoints: cfg.Endpoints, TLS: tlsCfg, TLSDigest: digest, Username: username, Password: password,
		StreamWindow: streamWindow,
	}
	dial := func(ctx context.Context) (etcdAPI, error) {
		conn, err := etcdclient.New(ctx, conf)
		if err != nil {
			return nil, err
		}
		return conn, nil
	}
	var secrets []string
	if password != "" {
		secrets = append(secrets, password)
	}
	return dial, secrets, nil
}

// etcdTLS builds the client TLS configuration, nil when no endpoint uses https.
func etcdTLS(cfg snapshot.Config) (*tls.Config, string, error) {
	if !anyHTTPS(cfg.Endpoints) {
		if cfg.CAFile != "" || cfg.CertFile != "" {
			return nil, "", fmt.Errorf("%s or %s is set but no endpoint in %s uses https", snapshot.EnvCAFile, snapshot.EnvCertFile, snapshot.EnvEndpoints)
		}
		return nil, "", nil
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	var material [][]byte
	if cfg.CAFile != "" {
		pool, pem, err := agentio.ReadCAPool(cfg.CAFile, snapshot.EnvCAFile)
		if err != nil {
			return nil, "", err
		}
		tlsCfg.RootCAs = pool
		material = append(material, pem)
	}
	if cfg.CertFile != "" {
		certPEM, err := os.ReadFile(cfg.CertFile)
		if err != nil {
			return nil, "", fmt.Errorf("reading %s: %w", snapshot.EnvCertFile, err)
		}
		keyPEM, err := os.ReadFile(cfg.KeyFile)
		if err != nil {
			return nil, "", fmt.Errorf("reading %s: %w", snapshot.EnvKeyFile, err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, "", fmt.Errorf("loading the client certificate of %s and %s: %w", snapshot.EnvCertFile, snapshot.EnvKeyFile, err)
		}
		tlsCfg.Certificates = []tls.Certificate{pair}
		material = append(material, certPEM, keyPEM)
	}
	return tlsCfg, etcdclient.DigestTLSMaterial(material...), nil
}

func anyHTTPS(endpoints []string) bool {
	return slices.ContainsFunc(endpoints, func(ep string) bool { return strings.HasPrefix(ep, "https://") })
}
