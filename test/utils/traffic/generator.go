package traffic

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/time/rate"

	"github.com/etcd-operator/etcd-operator/test/utils/etcdconn"
	"github.com/etcd-operator/etcd-operator/test/utils/linearizability"
)

// Defaults for zero Config fields. They keep the load light (the test machine has 2 cores
// shared with a Kubernetes cluster) while still writing every few milliseconds, so a write gap
// of a second is visible.
const (
	DefaultClients          = 3
	DefaultKeys             = 4
	DefaultKeyPrefix        = "/traffic/"
	DefaultReadRatio        = 0.5
	DefaultRate             = 100 // requests per second, all clients together
	DefaultRequestTimeout   = 2 * time.Second
	DefaultMaxRequests      = 20000
	DefaultMaxDuration      = 10 * time.Minute
	DefaultFinalReadTimeout = 30 * time.Second

	finalReadRetry = 200 * time.Millisecond
)

// Artifact file names written by Result.Verify on failure.
const (
	HistoryFile = "traffic-history.json"
	SummaryFile = "traffic-summary.json"
)

// ErrNotLinearizable is returned by Verify when the history is not linearizable (or the check
// timed out).
var ErrNotLinearizable = errors.New("history is not linearizable")

// ErrMissingWrites is returned by Verify when acknowledged writes are missing.
var ErrMissingWrites = errors.New("acknowledged writes missing")

// ErrTooLittleTraffic is returned by Verify when fewer puts were acknowledged than required,
// so a passing check would prove little.
var ErrTooLittleTraffic = errors.New("too few acknowledged writes")

// Config describes a workload. Zero fields take the defaults above.
type Config struct {
	// Endpoints are etcd client URLs with IP-literal hosts (see package etcdconn).
	Endpoints []string
	// TLS, Username and Password are passed to etcdconn.
	TLS                *tls.Config
	Username, Password string
	// NewClient, when set, replaces dialing Endpoints; it is called once per client and once
	// for the final reads, and the generator closes what it returns.
	NewClient func(ctx context.Context) (*clientv3.Client, error)

	// Clients is the number of concurrent clients, each with its own connection.
	Clients int
	// Keys is the number of keys, named KeyPrefix + "0", "1", ...
	Keys      int
	KeyPrefix string
	// ReadRatio is the fraction of requests that are gets, in (0, 1].
	ReadRatio float64
	// Rate limits requests per second across all clients.
	Rate float64
	// RequestTimeout bounds each request.
	RequestTimeout time.Duration
	// MaxRequests and MaxDuration bound the run; it also stops when ctx ends.
	MaxRequests int
	MaxDuration time.Duration
	// FinalReadTimeout bounds reading every key after traffic stops.
	FinalReadTimeout time.Duration
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Clients, DefaultClients)
	def(&c.Keys, DefaultKeys)
	def(&c.MaxRequests, DefaultMaxRequests)
	defDur(&c.RequestTimeout, DefaultRequestTimeout)
	defDur(&c.MaxDuration, DefaultMaxDuration)
	defDur(&c.FinalReadTimeout, DefaultFinalReadTimeout)
	if c.KeyPrefix == "" {
		c.KeyPrefix = DefaultKeyPrefix
	}
	if c.ReadRatio <= 0 || c.ReadRatio > 1 {
		c.ReadRatio = DefaultReadRatio
	}
	if c.Rate <= 0 {
		c.Rate = DefaultRate
	}
	return c
}

// Stats are live counters, readable while traffic runs.
type Stats struct {
	// Requests is the number of requests started.
	Requests int64
	// AckedPuts and FailedPuts count puts with a successful response and with an error.
	AckedPuts, FailedPuts int64
	// Gets and FailedGets count successful and failed gets.
	Gets, FailedGets int64
	// LastAckedAt is when the latest acknowledged put returned.
	LastAckedAt time.Time
}

// Generator runs one workload. Create it with New, run it once with Run.
type Generator struct {
	cfg Config

	// mu guards endpoints and clients, which SetEndpoints changes while traffic runs.
	mu        sync.Mutex
	endpoints []string
	clients   []*clientv3.Client

	requests, ackedPuts, failedPuts, gets, failedGets atomic.Int64
	lastAcked                                         atomic.Int64 // unix nanos
}

// New returns a generator for cfg.
func New(cfg Config) *Generator {
	cfg = cfg.withDefaults()
	return &Generator{cfg: cfg, endpoints: append([]string(nil), cfg.Endpoints...)}
}

// SetEndpoints replaces the endpoints of every client, live and future (the final reads). In
// Kubernetes a recreated member Pod gets a new IP; tests that roll or replace members call this
// as Pods change (see framework.FollowEndpoints), or traffic would stall once every original
// Pod is gone. Clients built by Config.NewClient are updated too.
func (g *Generator) SetEndpoints(endpoints ...string) error {
	if len(endpoints) == 0 {
		return errors.New("setting traffic endpoints: none given")
	}
	for _, ep := range endpoints {
		if err := etcdconn.ValidateEndpoint(ep); err != nil {
			return err
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.endpoints = append([]string(nil), endpoints...)
	for _, c := range g.clients {
		c.SetEndpoints(endpoints...)
	}
	return nil
}

// Endpoints returns the endpoints in use.
func (g *Generator) Endpoints() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.endpoints...)
}

// Stats returns the live counters; tests poll them to disrupt the cluster at a known point of
// the run (e.g. after the first hundred acknowledged writes).
func (g *Generator) Stats() Stats {
	s := Stats{
		Requests: g.requests.Load(), AckedPuts: g.ackedPuts.Load(), FailedPuts: g.failedPuts.Load(),
		Gets: g.gets.Load(), FailedGets: g.failedGets.Load(),
	}
	if n := g.lastAcked.Load(); n > 0 {
		s.LastAckedAt = time.Unix(0, n)
	}
	return s
}

// Result is the outcome of a run.
type Result struct {
	// History is every recorded operation, final reads included.
	History linearizability.History `json:"-"`
	// Counts summarises History.
	Counts linearizability.Counts `json:"counts"`
	// FailedGets is the number of gets that errored (left out of History).
	FailedGets int `json:"failedGets"`
	// Final is the value of every key after traffic stopped.
	Final map[string]FinalValue `json:"final"`
	// Missing are the acknowledged writes the final state cannot include.
	Missing []MissingWrite `json:"missing"`
	// WriteGap is the longest interval without a successful write.
	WriteGap Gap `json:"writeGap"`
	// Duration is how long traffic ran (final reads excluded).
	Duration time.Duration `json:"duration"`
}

// Run sends traffic until ctx ends or a bound is reached, then reads every key and analyses the
// history. An error means the workload could not run or the final reads failed; a Result is
// returned whenever traffic ran.
func (g *Generator) Run(ctx context.Context) (*Result, error) {
	cfg := g.cfg
	clients := make([]*clientv3.Client, 0, cfg.Clients)
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	// The clients live until Run returns, not until ctx ends: a client whose own context is
	// cancelled aborts its in-flight requests, which would turn stopping traffic into unknown
	// outcomes. Dialing is still bounded by the dial timeout.
	for range cfg.Clients {
		c, err := g.dial(context.WithoutCancel(ctx))
		if err != nil {
			return nil, err
		}
		clients = append(clients, c)
	}
	g.mu.Lock()
	g.clients = clients
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.clients = nil
		g.mu.Unlock()
	}()
	keys := make([]string, cfg.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%d", cfg.KeyPrefix, i)
	}

	rec := linearizability.NewRecorder()
	runCtx, cancel := context.WithTimeout(ctx, cfg.MaxDuration)
	defer cancel()
	limiter := rate.NewLimiter(rate.Limit(cfg.Rate), 1)
	var wg sync.WaitGroup
	for id, c := range clients {
		wg.Go(func() { g.client(runCtx, id, c, keys, limiter, rec) })
	}
	wg.Wait()
	end := rec.Since(time.Now())

	// Cancelling ctx is how callers stop traffic, so the final reads must outlive it; they
	// have their own bound (FinalReadTimeout).
	final, err := g.readFinal(context.WithoutCancel(ctx), keys, cfg.Clients, rec)
	h := rec.History()
	res := &Result{
		History:    h,
		Counts:     h.Counts(),
		FailedGets: rec.FailedReads(),
		Final:      final,
		WriteGap:   LongestWriteGap(h, end),
		Duration:   end,
	}
	if err != nil {
		return res, err
	}
	res.Missing, err = MissingAcknowledged(h, final)
	return res, err
}

func (g *Generator) dial(ctx context.Context) (*clientv3.Client, error) {
	if g.cfg.NewClient != nil {
		return g.cfg.NewClient(ctx)
	}
	return etcdconn.New(ctx, etcdconn.Options{
		Endpoints: g.Endpoints(), TLS: g.cfg.TLS, Username: g.cfg.Username, Password: g.cfg.Password,
	})
}

// client issues one request at a time until the run ends.
func (g *Generator) client(ctx context.Context, id int, c *clientv3.Client, keys []string, limiter *rate.Limiter, rec *linearizability.Recorder) {
	cfg := g.cfg
	// A per-client source keeps runs reproducible in shape without shared locking.
	rng := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano()))) //nolint:gosec // G404: picks keys and op kinds, not secrets.
	for seq := 0; ; seq++ {
		if err := limiter.Wait(ctx); err != nil {
			return
		}
		if g.requests.Add(1) > int64(cfg.MaxRequests) {
			return
		}
		key := keys[rng.IntN(len(keys))]
		// In-flight requests finish on their own timeout even when the run is cancelled, so
		// stopping traffic does not manufacture unknown outcomes.
		reqCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.RequestTimeout)
		if rng.Float64() < cfg.ReadRatio {
			g.get(reqCtx, id, c, key, rec)
		} else {
			g.put(reqCtx, id, c, key, fmt.Sprintf("%d-%d", id, seq), rec)
		}
		cancel()
	}
}

// get issues one linearizable get and records it.
func (g *Generator) get(ctx context.Context, id int, c *clientv3.Client, key string, rec *linearizability.Recorder) {
	call := time.Now()
	resp, err := c.Get(ctx, key)
	ret := time.Now()
	value, found := "", false
	if err == nil && len(resp.Kvs) > 0 {
		value, found = string(resp.Kvs[0].Value), true
	}
	rec.RecordGet(id, key, value, found, call, ret, err)
	if err != nil {
		g.failedGets.Add(1)
		return
	}
	g.gets.Add(1)
}

// put issues one put and records it; an error makes its outcome unknown.
func (g *Generator) put(ctx context.Context, id int, c *clientv3.Client, key, value string, rec *linearizability.Recorder) {
	call := time.Now()
	_, err := c.Put(ctx, key, value)
	ret := time.Now()
	rec.RecordPut(id, key, value, call, ret, err)
	if err != nil {
		g.failedPuts.Add(1)
		return
	}
	g.ackedPuts.Add(1)
	g.lastAcked.Store(ret.UnixNano())
}

// readFinal reads every key with a linearizable get, retrying each until FinalReadTimeout, and
// records the reads in the history under clientID.
func (g *Generator) readFinal(ctx context.Context, keys []string, clientID int, rec *linearizability.Recorder) (map[string]FinalValue, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.FinalReadTimeout)
	defer cancel()
	c, err := g.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("final reads: %w", err)
	}
	defer func() { _ = c.Close() }()
	final := make(map[string]FinalValue, len(keys))
	for _, key := range keys {
		for {
			reqCtx, reqCancel := context.WithTimeout(ctx, g.cfg.RequestTimeout)
			call := time.Now()
			resp, err := c.Get(reqCtx, key)
			ret := time.Now()
			reqCancel()
			if err == nil {
				fv := FinalValue{}
				if len(resp.Kvs) > 0 {
					fv = FinalValue{Value: string(resp.Kvs[0].Value), Found: true}
				}
				rec.RecordGet(clientID, key, fv.Value, fv.Found, call, ret, nil)
				final[key] = fv
				break
			}
			select {
			case <-ctx.Done():
				return final, fmt.Errorf("final read of %s: %w (last error: %w)", key, ctx.Err(), err)
			case <-time.After(finalReadRetry):
			}
		}
	}
	return final, nil
}

// Verify checks the result: the history must be linearizable, no acknowledged write may be
// missing, and at least minAcked puts must have been acknowledged (a guard against a run that
// proves nothing). On failure, when artifactsDir is not empty, it writes the history, a summary
// and porcupine's visualization there. The linearizability verdict is returned either way.
func (r *Result) Verify(minAcked int, artifactsDir string) (linearizability.Result, error) {
	lin, err := linearizability.Check(r.History, linearizability.DefaultTimeout)
	if err != nil {
		return lin, err
	}
	var errs []error
	if !lin.Linearizable() {
		errs = append(errs, fmt.Errorf("%w: porcupine verdict %s over %d operations", ErrNotLinearizable, lin.Verdict, lin.Operations))
	}
	if n := len(r.Missing); n > 0 {
		errs = append(errs, fmt.Errorf("%w: %d, first: %s %s=%s: %s", ErrMissingWrites, n, r.Missing[0].Op.Kind, r.Missing[0].Op.Key, r.Missing[0].Op.Value, r.Missing[0].Reason))
	}
	if r.Counts.AckedPuts < minAcked {
		errs = append(errs, fmt.Errorf("%w: %d acknowledged, want at least %d", ErrTooLittleTraffic, r.Counts.AckedPuts, minAcked))
	}
	err = errors.Join(errs...)
	if err != nil && artifactsDir != "" {
		if werr := r.writeArtifacts(lin, artifactsDir); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	return lin, err
}

func (r *Result) writeArtifacts(lin linearizability.Result, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating artifacts dir: %w", err)
	}
	write := func(name string, v any) error {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("encoding %s: %w", name, err)
		}
		return os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	var errs []error
	errs = append(errs, write(HistoryFile, r.History), write(SummaryFile, r))
	if !lin.Linearizable() {
		_, err := lin.WriteVisualization(dir)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// String summarises the run in one line for test logs.
func (r *Result) String() string {
	return fmt.Sprintf("%s of traffic: %d acknowledged puts, %d unknown, %d gets (%d failed), %d acknowledged writes missing, longest write gap %s at %s",
		r.Duration.Round(time.Millisecond), r.Counts.AckedPuts, r.Counts.UnknownPuts, r.Counts.Gets, r.FailedGets,
		len(r.Missing), r.WriteGap.Length.Round(time.Millisecond), r.WriteGap.From.Round(time.Millisecond))
}
