package framework

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
)

// DNSQuery is one query as CoreDNS's log plugin records it, in its default format:
//
//	[INFO] 10.244.2.15:36914 - 50568 "A IN m-0.m.ns.svc.cluster.local. udp 78 false 1232" NOERROR qr,aa,rd 108 0.0003s
type DNSQuery struct {
	// Client is the address the query came from; a Pod's queries carry its Pod IP.
	Client netip.Addr
	// Type is the query type (A, AAAA, SRV, ...).
	Type string
	// Name is the queried name, fully qualified with its trailing dot.
	Name string
	// Rcode is the response code (NOERROR, NXDOMAIN, ...).
	Rcode string
}

// ParseCoreDNSQuery reads one line of CoreDNS's log; ok is false for lines that are not
// query records (start-up banners, errors, the cluster tool's own markers).
func ParseCoreDNSQuery(line string) (q DNSQuery, ok bool) {
	rest, found := strings.CutPrefix(line, "[INFO] ")
	if !found {
		return DNSQuery{}, false
	}
	client, rest, found := strings.Cut(rest, " - ")
	if !found {
		return DNSQuery{}, false
	}
	ap, err := netip.ParseAddrPort(client)
	if err != nil {
		return DNSQuery{}, false
	}
	_, rest, found = strings.Cut(rest, ` "`) // the query ID
	if !found {
		return DNSQuery{}, false
	}
	question, rest, found := strings.Cut(rest, `" `)
	if !found {
		return DNSQuery{}, false
	}
	qf, rf := strings.Fields(question), strings.Fields(rest)
	if len(qf) < 3 || len(rf) < 1 {
		return DNSQuery{}, false
	}
	return DNSQuery{Client: ap.Addr().Unmap(), Type: qf[0], Name: qf[2], Rcode: rf[0]}, true
}

// ReadCoreDNSQueries reads the query records of CoreDNS's log from byte offset on (a size
// taken earlier, so only queries logged since then are read). It returns them and the offset
// of the end it read up to.
func ReadCoreDNSQueries(path string, offset int64) ([]DNSQuery, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, offset, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, offset, fmt.Errorf("%s: %w", path, err)
	}
	var queries []DNSQuery
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	end := offset
	for sc.Scan() {
		end += int64(len(sc.Bytes())) + 1
		if q, ok := ParseCoreDNSQuery(sc.Text()); ok {
			queries = append(queries, q)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, offset, fmt.Errorf("%s: %w", path, err)
	}
	return queries, end, nil
}
