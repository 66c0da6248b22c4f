//go:build e2e

package lifecycle

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// connKey identifies one TCP connection of the operator's namespace to a member.
type connKey struct {
	localPort uint16
	remote    netip.AddrPort
}

func (k connKey) String() string { return fmt.Sprintf(":%d→%s", k.localPort, k.remote) }

// idleSampler reads the operator process's sockets and memory every idleSampleInterval.
type idleSampler struct {
	op      operatorProcess
	members map[netip.Addr]string

	samples int
	// atStart are the connections to the members' client port at the first sample, with
	// their state; opened are those first seen later, with when and in which state.
	atStart map[connKey]string
	opened  map[connKey]string
	// activeOpens* is the namespace's ActiveOpens counter at the first and last sample.
	activeOpensStart, activeOpensEnd int64
	rssMax, rssLast, hwm             int64
}

func newSampler(op operatorProcess, members map[netip.Addr]string) *idleSampler {
	return &idleSampler{op: op, members: members, atStart: map[connKey]string{}, opened: map[connKey]string{}}
}

// run samples until deadline. It stops with errOperatorReplaced when the process goes away.
func (s *idleSampler) run(ctx context.Context, deadline time.Time) error {
	t := time.NewTicker(idleSampleInterval)
	defer t.Stop()
	start := time.Now()
	for {
		if err := s.sample(time.Since(start)); err != nil {
			return err
		}
		if !time.Now().Before(deadline) {
			opens, err := framework.HostProc.TCPActiveOpens(s.op.pid)
			s.activeOpensEnd = opens
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (s *idleSampler) sample(at time.Duration) error {
	pid := s.op.pid
	if err := s.op.alive(); err != nil {
		return fmt.Errorf("%w, %s into the window", err, at.Round(time.Second))
	}
	// The counter is read before the sockets, and once more after the last sample (run), so
	// every connection first seen after the first sample was counted between the two reads.
	opens, err := framework.HostProc.TCPActiveOpens(pid)
	if err != nil {
		return fmt.Errorf("reading the operator's TCP counters: %w", err)
	}
	conns, err := framework.HostProc.TCPConns(pid)
	if err != nil {
		return fmt.Errorf("reading the operator's sockets: %w", err)
	}
	mem, err := framework.HostProc.Memory(pid)
	if err != nil {
		return fmt.Errorf("reading the operator's memory: %w", err)
	}
	first := s.samples == 0
	s.samples++
	if first {
		s.activeOpensStart = opens
	}
	s.rssMax, s.rssLast, s.hwm = max(s.rssMax, mem.RSS), mem.RSS, mem.HWM
	for _, c := range conns {
		if c.State == "LISTEN" || c.Remote.Port() != etcdClientPortNumber || s.members[c.Remote.Addr()] == "" {
			continue
		}
		k := connKey{localPort: c.Local.Port(), remote: c.Remote}
		switch {
		case first:
			s.atStart[k] = c.State
		case s.atStart[k] == "" && s.opened[k] == "":
			s.opened[k] = fmt.Sprintf("%s at +%s", c.State, at.Round(time.Second))
		}
	}
	return nil
}

func (s *idleSampler) atStartList() []string { return describeConns(s.atStart) }
func (s *idleSampler) newList() []string     { return describeConns(s.opened) }

func describeConns(m map[connKey]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k.String()+" "+v)
	}
	sort.Strings(out)
	return out
}

// dnsWatch counts the operator Pod's DNS queries in CoreDNS's log from a byte offset on, and
// proves the log works by sending probe queries from the operator's own network namespace.
type dnsWatch struct {
	op        operatorProcess
	log       string
	offset    int64
	namespace string
	server    *net.UDPAddr
	probes    map[string]string // query name → phase
}

// dnsCounts are the operator Pod's queries by "TYPE name".
type dnsCounts struct {
	// cluster are queries for names in the idle cluster's namespace.
	cluster map[string]int64
	// all are every query from the operator Pod, probes excluded.
	all map[string]int64
	// probesSeen are the phases whose probe query was found.
	probesSeen map[string]bool
}

// newDNSWatch starts at the log's current end and asks the first nameserver of the operator
// container's own resolv.conf, the server its lookups go to.
func newDNSWatch(op operatorProcess, logPath, namespace string) (*dnsWatch, error) {
	st, err := os.Stat(logPath)
	if err != nil {
		return nil, fmt.Errorf("CoreDNS's log: %w", err)
	}
	resolv := fmt.Sprintf("/proc/%d/root/etc/resolv.conf", op.pid)
	content, err := os.ReadFile(resolv)
	if err != nil {
		return nil, fmt.Errorf("reading the operator container's resolv.conf: %w", err)
	}
	var server netip.Addr
	for line := range strings.SplitSeq(string(content), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "nameserver" && !server.IsValid() {
			server, _ = netip.ParseAddr(f[1])
		}
	}
	if !server.IsValid() {
		return nil, fmt.Errorf("%s names no nameserver:\n%s", resolv, content)
	}
	return &dnsWatch{
		op: op, log: logPath, offset: st.Size(), namespace: namespace,
		server: net.UDPAddrFromAddrPort(netip.AddrPortFrom(server, 53)), probes: map[string]string{},
	}, nil
}

// probe sends one query, for a name in the idle cluster's namespace that does not exist,
// from the operator's network namespace; read expects to find it under the Pod's IP.
func (d *dnsWatch) probe(phase string) error {
	name := fmt.Sprintf("idle-dns-probe-%s-%s.%s.svc.cluster.local.", phase, strings.ToLower(rand.Text()), d.namespace)
	conn, err := framework.DialUDPInNetNS(d.op.pid, d.server)
	if err != nil {
		return fmt.Errorf("DNS probe from the operator's network namespace: %w", err)
	}
	defer func() { _ = conn.Close() }()
	if _, err := framework.QueryDNS(conn, name, dnsProbeTimeout); err != nil {
		return fmt.Errorf("DNS probe from the operator's network namespace to %s: %w", d.server, err)
	}
	d.probes[name] = phase
	return nil
}

func (d *dnsWatch) read() (dnsCounts, error) {
	queries, _, err := framework.ReadCoreDNSQueries(d.log, d.offset)
	if err != nil {
		return dnsCounts{}, fmt.Errorf("reading CoreDNS's query log: %w", err)
	}
	c := dnsCounts{cluster: map[string]int64{}, all: map[string]int64{}, probesSeen: map[string]bool{}}
	for _, q := range queries {
		if q.Client != d.op.podIP {
			continue
		}
		if phase, ok := d.probes[q.Name]; ok {
			c.probesSeen[phase] = true
			continue
		}
		key := q.Type + " " + q.Name + " → " + q.Rcode
		c.all[key]++
		if strings.Contains(q.Name, "."+d.namespace+".") {
			c.cluster[key]++
		}
	}
	return c, nil
}
