package framework

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// DialUDPInNetNS opens a UDP socket in the network namespace of process pid (a Pod's, found
// with ProcFS.ContainerProcess) and connects it to addr, so what it sends leaves from the
// Pod's address, as if the Pod had sent it. Only the socket is created there; the calling
// goroutine keeps its own namespace. It needs CAP_SYS_ADMIN (the e2e tests run as root).
func DialUDPInNetNS(pid int, addr *net.UDPAddr) (*net.UDPConn, error) {
	var conn *net.UDPConn
	err := InNetNS(pid, func() error {
		var err error
		conn, err = net.DialUDP("udp", nil, addr)
		return err
	})
	if err != nil && conn != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, err
}

// DialInNetNS connects to addr (an IP literal and a port) over network ("tcp", "udp") from
// the network namespace of process pid, as DialUDPInNetNS does: the socket belongs to that
// namespace for its whole life, so a TCP connection opened here is a Pod's connection, routed
// by the Pod's interface and the node's Service rules (docs/testing-e2e.md, "In-cluster
// clients").
func DialInNetNS(ctx context.Context, pid int, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := InNetNS(pid, func() error {
		var err error
		// One IP literal: the dialer connects from this goroutine, with no parallel
		// fallback goroutine that would run in another namespace.
		conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	if err != nil && conn != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, err
}

// InNetNS runs fn on an OS thread that has joined the network namespace of process pid, then
// returns the thread to the test's namespace. Sockets fn creates stay in pid's namespace.
func InNetNS(pid int, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		// setns changes the calling thread only. The goroutine holds its thread until it
		// restored the thread's namespace; if that fails, it exits still locked and the
		// runtime throws the thread away instead of reusing it.
		runtime.LockOSThread()
		restored, err := inNetNS(pid, fn)
		if restored {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

func inNetNS(pid int, fn func() error) (restored bool, err error) {
	own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		return true, err
	}
	defer func() { _ = own.Close() }()
	target, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return true, err
	}
	defer func() { _ = target.Close() }()
	if err := setns(target); err != nil {
		return true, fmt.Errorf("joining the network namespace of pid %d: %w", pid, err)
	}
	err = fn()
	if rerr := setns(own); rerr != nil {
		return false, errors.Join(err, fmt.Errorf("returning to the test's network namespace: %w", rerr))
	}
	return true, err
}

func setns(ns *os.File) error {
	return unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET)
}

// DNS response codes QueryDNS returns.
const (
	DNSNoError  = 0
	DNSNXDomain = 3
)

// QueryDNS sends one A query for name (fully qualified, with or without the trailing dot)
// over conn, a UDP socket connected to a DNS server, and returns the response code of the
// matching answer.
func QueryDNS(conn *net.UDPConn, name string, timeout time.Duration) (int, error) {
	var idBytes [2]byte
	if _, err := rand.Read(idBytes[:]); err != nil {
		return 0, err
	}
	id := binary.BigEndian.Uint16(idBytes[:])
	query, err := dnsQuery(id, name)
	if err != nil {
		return 0, err
	}
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return 0, err
	}
	if _, err := conn.Write(query); err != nil {
		return 0, fmt.Errorf("sending the DNS query for %s: %w", name, err)
	}
	buf := make([]byte, 1500)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return 0, fmt.Errorf("waiting for the DNS answer for %s: %w", name, err)
		}
		// Header: ID, then flags with QR (answer) in the top bit and RCODE in the low 4.
		if n >= 12 && binary.BigEndian.Uint16(buf) == id && buf[2]&0x80 != 0 {
			return int(buf[3] & 0x0f), nil
		}
	}
}

// dnsQuery builds a recursion-desired query for the A record of name (RFC 1035 §4.1).
func dnsQuery(id uint16, name string) ([]byte, error) {
	msg := binary.BigEndian.AppendUint16(nil, id)
	msg = append(msg, 0x01, 0x00) // RD
	msg = append(msg, 0, 1, 0, 0, 0, 0, 0, 0)
	for label := range strings.SplitSeq(strings.TrimSuffix(name, "."), ".") {
		if label == "" || len(label) > 63 {
			return nil, errors.New("DNS name " + name + ": empty label or one longer than 63 bytes")
		}
		msg = append(msg, byte(len(label)))
		msg = append(msg, label...)
	}
	msg = append(msg, 0)
	return append(msg, 0, 1, 0, 1), nil // type A, class IN
}
