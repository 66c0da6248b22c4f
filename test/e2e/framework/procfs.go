package framework

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcFS reads a proc file system: the host's (/proc) for processes of the local cluster's
// containers, which run on this machine. Root is a parameter so the parsing can be tested on
// a fake tree.
type ProcFS struct {
	// Root is the mount point, "/proc" on the host.
	Root string
}

// HostProc is the host's proc file system.
var HostProc = ProcFS{Root: "/proc"}

// ErrNoProcess means no process matched.
var ErrNoProcess = errors.New("no such process")

func (p ProcFS) path(pid int, parts ...string) string {
	return filepath.Join(append([]string{p.Root, strconv.Itoa(pid)}, parts...)...)
}

// ContainerProcess finds the main process of a container by its runtime ID: the process
// whose cgroup path names the ID and whose parent is outside that cgroup (the shim). It fails
// unless exactly one such process exists.
func (p ProcFS) ContainerProcess(containerID string) (int, error) {
	if len(containerID) < 12 {
		return 0, fmt.Errorf("container ID %q is too short to search for", containerID)
	}
	entries, err := os.ReadDir(p.Root)
	if err != nil {
		return 0, err
	}
	in := map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cg, err := os.ReadFile(p.path(pid, "cgroup"))
		if err == nil && bytes.Contains(cg, []byte(containerID)) {
			in[pid] = true
		}
	}
	var roots []int
	for pid := range in {
		ppid, err := p.parent(pid)
		if err == nil && !in[ppid] {
			roots = append(roots, pid)
		}
	}
	switch len(roots) {
	case 0:
		return 0, fmt.Errorf("container %s: %w in %s (is this the host of the cluster's nodes?)", containerID, ErrNoProcess, p.Root)
	case 1:
		return roots[0], nil
	default:
		return 0, fmt.Errorf("container %s: %d processes without a parent in the container: %v", containerID, len(roots), roots)
	}
}

func (p ProcFS) parent(pid int) (int, error) {
	status, err := os.ReadFile(p.path(pid, "status"))
	if err != nil {
		return 0, err
	}
	v, ok := statusField(status, "PPid")
	if !ok {
		return 0, fmt.Errorf("%s has no PPid", p.path(pid, "status"))
	}
	return strconv.Atoi(v)
}

// StartTime is the process's start time in clock ticks after boot (field 22 of stat). A pid
// with another start time is another process: pids are reused.
func (p ProcFS) StartTime(pid int) (uint64, error) {
	stat, err := os.ReadFile(p.path(pid, "stat"))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is parenthesised and may hold spaces: split after it.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s: malformed", p.path(pid, "stat"))
	}
	fields := strings.Fields(string(stat[i+1:]))
	// fields[0] is field 3 (state), so field 22 is fields[19].
	if len(fields) < 20 {
		return 0, fmt.Errorf("%s: %d fields after the name", p.path(pid, "stat"), len(fields))
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// Memory is a process's resident memory, from /proc/<pid>/status.
type Memory struct {
	// RSS is VmRSS, the resident set now, in bytes.
	RSS int64
	// HWM is VmHWM, the largest resident set so far, in bytes.
	HWM int64
}

// Memory reads the process's VmRSS and VmHWM.
func (p ProcFS) Memory(pid int) (Memory, error) {
	status, err := os.ReadFile(p.path(pid, "status"))
	if err != nil {
		return Memory{}, err
	}
	return ParseMemory(status)
}

// ParseMemory reads VmRSS and VmHWM (in kB) from the content of /proc/<pid>/status.
func ParseMemory(status []byte) (Memory, error) {
	var m Memory
	for key, dst := range map[string]*int64{"VmRSS": &m.RSS, "VmHWM": &m.HWM} {
		v, ok := statusField(status, key)
		if !ok {
			return Memory{}, fmt.Errorf("status has no %s (a kernel thread or a zombie?)", key)
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
		if err != nil || !strings.HasSuffix(v, " kB") {
			return Memory{}, fmt.Errorf("status %s %q: not a size in kB", key, v)
		}
		*dst = kb << 10
	}
	return m, nil
}

// statusField returns the value of "key:\tvalue" in a status file.
func statusField(status []byte, key string) (string, bool) {
	for line := range strings.SplitSeq(string(status), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// TCPConn is one TCP socket of a network namespace, from /proc/<pid>/net/tcp or tcp6.
type TCPConn struct {
	// Local and Remote are the socket's addresses; IPv4-mapped IPv6 addresses are unmapped.
	Local, Remote netip.AddrPort
	// State is the kernel's state name, e.g. ESTABLISHED or TIME_WAIT.
	State string
}

// tcpStates names the kernel's TCP states (include/net/tcp_states.h).
var tcpStates = map[string]string{
	"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1", "05": "FIN_WAIT2",
	"06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN",
	"0B": "CLOSING", "0C": "NEW_SYN_RECV",
}

// TCPConns lists the TCP sockets of the network namespace pid is in, IPv4 and IPv6. The
// files describe the namespace, not the process: every process of a Pod sees the same list.
// Sockets in TIME_WAIT stay listed for a minute after the side that closed first let go.
func (p ProcFS) TCPConns(pid int) ([]TCPConn, error) {
	var all []TCPConn
	for _, f := range []string{"tcp", "tcp6"} {
		file, err := os.Open(p.path(pid, "net", f))
		if errors.Is(err, os.ErrNotExist) && f == "tcp6" {
			continue // IPv6 disabled
		}
		if err != nil {
			return nil, err
		}
		conns, err := ParseProcNetTCP(file)
		_ = file.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.path(pid, "net", f), err)
		}
		all = append(all, conns...)
	}
	return all, nil
}

// ParseProcNetTCP reads the content of /proc/net/tcp or /proc/net/tcp6.
func ParseProcNetTCP(r io.Reader) ([]TCPConn, error) {
	var conns []TCPConn
	sc := bufio.NewScanner(r)
	first := true
	for sc.Scan() {
		if first { // the header line
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		local, err := parseProcAddr(f[1])
		if err != nil {
			return nil, err
		}
		remote, err := parseProcAddr(f[2])
		if err != nil {
			return nil, err
		}
		state, ok := tcpStates[strings.ToUpper(f[3])]
		if !ok {
			state = "0x" + f[3]
		}
		conns = append(conns, TCPConn{Local: local, Remote: remote, State: state})
	}
	return conns, sc.Err()
}

// parseProcAddr reads "0100007F:1F90": the address as the kernel stores it (32-bit words in
// host byte order, little-endian here), then the port in hex.
func parseProcAddr(s string) (netip.AddrPort, error) {
	addrHex, portHex, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("address %q: no port", s)
	}
	raw, err := hex.DecodeString(addrHex)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("address %q: not 4 or 16 hex bytes", s)
	}
	for w := 0; w < len(raw); w += 4 {
		raw[w], raw[w+1], raw[w+2], raw[w+3] = raw[w+3], raw[w+2], raw[w+1], raw[w]
	}
	addr, _ := netip.AddrFromSlice(raw)
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: port: %w", s, err)
	}
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}

// TCPActiveOpens is the namespace's count of TCP connections opened by connect() since it was
// created (ActiveOpens in /proc/<pid>/net/snmp), to any destination. Its growth over a window
// counts every connection attempt, also those too short-lived for sampling to see.
func (p ProcFS) TCPActiveOpens(pid int) (int64, error) {
	snmp, err := os.ReadFile(p.path(pid, "net", "snmp"))
	if err != nil {
		return 0, err
	}
	return ParseTCPActiveOpens(snmp)
}

// ParseTCPActiveOpens reads ActiveOpens from the content of /proc/<pid>/net/snmp, where the
// Tcp line of names is followed by the Tcp line of values.
func ParseTCPActiveOpens(snmp []byte) (int64, error) {
	var names []string
	for line := range strings.SplitSeq(string(snmp), "\n") {
		rest, ok := strings.CutPrefix(line, "Tcp: ")
		if !ok {
			continue
		}
		if names == nil {
			names = strings.Fields(rest)
			continue
		}
		values := strings.Fields(rest)
		for i, n := range names {
			if n == "ActiveOpens" && i < len(values) {
				return strconv.ParseInt(values[i], 10, 64)
			}
		}
		break
	}
	return 0, errors.New("snmp has no Tcp ActiveOpens")
}
