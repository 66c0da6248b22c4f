package framework

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseCoreDNSQuery(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]*DNSQuery{
		`[INFO] 10.244.2.15:36914 - 50568 "A IN b1-zrn24.b1.default.svc.cluster.local. udp 66 false 1232" NOERROR qr,aa,rd 108 0.000295101s`: {
			Client: netip.MustParseAddr("10.244.2.15"), Type: "A", Name: "b1-zrn24.b1.default.svc.cluster.local.", Rcode: "NOERROR",
		},
		`[INFO] [::ffff:10.244.0.3]:5300 - 7 "AAAA IN etcd.io. tcp 40 false 65535" NXDOMAIN qr,aa,rd 100 0.0001s`: {
			Client: netip.MustParseAddr("10.244.0.3"), Type: "AAAA", Name: "etcd.io.", Rcode: "NXDOMAIN",
		},
		`[INFO] [fd00::1]:5300 - 7 "SRV IN _etcd-server._tcp.x. udp 40 false 512" SERVFAIL qr,rd 40 0.1s`: {
			Client: netip.MustParseAddr("fd00::1"), Type: "SRV", Name: "_etcd-server._tcp.x.", Rcode: "SERVFAIL",
		},
		`[INFO] plugin/reload: Running configuration SHA512 = 0123`:                 nil,
		`[ERROR] plugin/errors: 2 example.org. A: read udp: i/o timeout`:            nil,
		`=== 2026-11-30T04:30:52Z starting: /bin/coredns -conf Corefile`:            nil,
		`[INFO] 10.244.2.15:36914 - 50568 "A IN truncated`:                          nil,
		`[INFO] not-an-address - 50568 "A IN x. udp 66 false 1232" NOERROR qr 1 1s`: nil,
		``: nil,
	} {
		got, ok := ParseCoreDNSQuery(line)
		if want == nil {
			if ok {
				t.Errorf("ParseCoreDNSQuery(%q) = %+v, want no query", line, got)
			}
			continue
		}
		if !ok || got != *want {
			t.Errorf("ParseCoreDNSQuery(%q) = %+v, %t; want %+v", line, got, ok, *want)
		}
	}
}

func TestReadCoreDNSQueriesFromOffset(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "coredns.log")
	before := `[INFO] 10.244.0.5:1 - 1 "A IN old. udp 1 false 512" NXDOMAIN qr 1 1s` + "\n"
	after := "=== restarted\n" +
		`[INFO] 10.244.0.5:2 - 2 "A IN new. udp 1 false 512" NXDOMAIN qr 1 1s` + "\n" +
		`[INFO] 10.244.1.9:3 - 3 "AAAA IN other. udp 1 false 512" NOERROR qr 1 1s` + "\n"
	if err := os.WriteFile(path, []byte(before+after), 0o644); err != nil {
		t.Fatal(err)
	}
	qs, end, err := ReadCoreDNSQueries(path, int64(len(before)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, q := range qs {
		names = append(names, q.Client.String()+" "+q.Name)
	}
	if diff := cmp.Diff([]string{"10.244.0.5 new.", "10.244.1.9 other."}, names); diff != "" {
		t.Errorf("queries after the offset (-want +got):\n%s", diff)
	}
	if end != int64(len(before+after)) {
		t.Errorf("end offset %d, want %d", end, len(before+after))
	}
}

// TestQueryDNSFromOwnNetNS joins this process's own network namespace (the code path a Pod's
// takes) and asks a fake DNS server, which checks the query and answers NXDOMAIN.
func TestQueryDNSFromOwnNetNS(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("joining a network namespace needs root")
	}
	srv, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 512)
		n, from, err := srv.ReadFromUDP(buf)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(buf[12:n]) // the question
		answer := append([]byte{}, buf[:n]...)
		answer[2] |= 0x80 // QR
		answer[3] = 3     // NXDOMAIN
		// An answer with another ID first: QueryDNS must skip it.
		stray := append([]byte{}, answer...)
		stray[0]++
		_, _ = srv.WriteToUDP(stray, from)
		_, _ = srv.WriteToUDP(answer, from)
	}()
	conn, err := DialUDPInNetNS(os.Getpid(), srv.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	rcode, err := QueryDNS(conn, "probe-1.ns.svc.cluster.local.", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if rcode != DNSNXDomain {
		t.Errorf("rcode %d, want NXDOMAIN", rcode)
	}
	wantQ := "\x07probe-1\x02ns\x03svc\x07cluster\x05local\x00\x00\x01\x00\x01"
	if q := <-got; q != wantQ {
		t.Errorf("question %q, want %q", q, wantQ)
	}
	if _, err := dnsQuery(1, "a.."+strings.Repeat("x", 3)); err == nil {
		t.Error("a name with an empty label was encoded")
	}
	if _, err := DialUDPInNetNS(1<<30, srv.LocalAddr().(*net.UDPAddr)); err == nil {
		t.Error("joined the namespace of a pid that does not exist")
	}
}
