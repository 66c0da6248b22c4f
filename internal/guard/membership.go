package guard

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
)

// membersPath is the peer API's member list, the one etcd itself reads from its peers when it
// joins an existing cluster (--initial-cluster-state=existing) with an empty data dir.
const membersPath = "/members"

// memberListTimeout bounds one peer's answer.
const memberListTimeout = time.Second

// Membership is what the guard waits on before it starts a member that is to join a cluster
// (docs/design/membership-flows.md, "Staged joins"): the Pod of such a member is created before
// the member is added to etcd, so that its scheduling, volume and image work is done while the
// cluster is not ready for the add yet. etcd itself would exit at once on a membership that does
// not list it yet; the guard starts it only once a peer's member list names its peer URL.
type Membership struct {
	// Self is the member's own peer URL (--initial-advertise-peer-urls).
	Self string
	// Peers are the peer URLs of the other members (from --initial-cluster).
	Peers []string
	// Client asks the peers; it carries the peer TLS identity when the peers use TLS.
	Client *http.Client
	// Interval is how often the peers are asked.
	Interval time.Duration
	// Log receives one line when the wait starts and one when it ends.
	Log io.Writer
}

// Await returns once a peer lists Self, or ctx's error. Peers that do not answer, or answer
// without Self, are asked again after Interval: a cluster the member is being added to is
// usually a moment away from listing it.
func (m Membership) Await(ctx context.Context) error {
	if len(m.Peers) == 0 {
		return errors.New("no peer to ask whether this member was added: --initial-cluster names only itself")
	}
	_, _ = fmt.Fprintf(m.Log, "etcd-guard: waiting for the cluster to list %s before starting etcd (asking %s)\n", m.Self, strings.Join(m.Peers, ", "))
	start := time.Now()
	tick := time.NewTicker(m.Interval)
	defer tick.Stop()
	for {
		for _, p := range m.Peers {
			if listed, _ := m.lists(ctx, p); listed {
				_, _ = fmt.Fprintf(m.Log, "etcd-guard: %s lists this member after %s; starting etcd\n", p, time.Since(start).Round(time.Millisecond))
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the cluster to list %s: %w", m.Self, ctx.Err())
		case <-tick.C:
		}
	}
}

// lists asks peer for its member list and reports whether it names Self.
func (m Membership) lists(ctx context.Context, peer string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, memberListTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(peer, "/")+membersPath, nil)
	if err != nil {
		return false, err
	}
	resp, err := m.Client.Do(req)
	if err != nil {
		return false, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("%s answered %s", peer, resp.Status)
	}
	var members []struct {
		PeerURLs []string `json:"peerURLs"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&members); err != nil {
		return false, fmt.Errorf("reading the member list of %s: %w", peer, err)
	}
	return slices.ContainsFunc(members, func(e struct {
		PeerURLs []string `json:"peerURLs"`
	}) bool {
		return slices.Contains(e.PeerURLs, m.Self)
	}), nil
}

// etcdFlags are the etcd flags the wait reads, from etcd's own command line.
type etcdFlags map[string]string

// parseEtcdFlags reads --name=value flags (the form the Pod builder renders); bare flags count
// as "true".
func parseEtcdFlags(args []string) etcdFlags {
	out := etcdFlags{}
	for _, a := range args {
		name, value, found := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") {
			continue
		}
		if !found {
			value = "true"
		}
		out[name] = value
	}
	return out
}

// membershipOf builds the wait from etcd's command line: its own peer URL, the other members of
// --initial-cluster, and, for peers on TLS, the member's own peer certificate (peer mTLS) or no
// verification at all (peer auto-TLS, self-signed by design).
func membershipOf(args []string, interval time.Duration, log io.Writer) (Membership, error) {
	f := parseEtcdFlags(args)
	self, _, _ := strings.Cut(f["initial-advertise-peer-urls"], ",")
	if self == "" {
		return Membership{}, errors.New("etcd's command line has no --initial-advertise-peer-urls")
	}
	var peers []string
	for _, entry := range strings.Split(f["initial-cluster"], ",") {
		name, url, ok := strings.Cut(entry, "=")
		if ok && name != f["name"] && url != self {
			peers = append(peers, url)
		}
	}
	t, err := peerTLS(f)
	if err != nil {
		return Membership{}, err
	}
	return Membership{Self: self, Peers: peers, Interval: interval, Log: log,
		Client: &http.Client{Transport: &http.Transport{TLSClientConfig: t, Proxy: nil}}}, nil
}

// peerTLS is the client TLS configuration for asking peers, nil for plaintext peers.
func peerTLS(f etcdFlags) (*tls.Config, error) {
	if f["peer-auto-tls"] == "true" && f["peer-cert-file"] == "" {
		return &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true}, nil //nolint:gosec // G402: peer auto-TLS certificates are self-signed; etcd's own peers skip verification too
	}
	if f["peer-cert-file"] == "" {
		return nil, nil
	}
	pair, err := tls.LoadX509KeyPair(f["peer-cert-file"], f["peer-key-file"])
	if err != nil {
		return nil, fmt.Errorf("loading the peer certificate: %w", err)
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
	if ca := f["peer-trusted-ca-file"]; ca != "" {
		pem, err := os.ReadFile(ca) //nolint:gosec // the Pod's own mounted CA bundle
		if err != nil {
			return nil, fmt.Errorf("reading the peer CA bundle: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no CA certificate in %s", ca)
		}
		t.RootCAs = pool
	}
	return t, nil
}
