package framework

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Lines in the kernel's format: addresses as 32-bit words in host byte order, ports in hex.
const procNetTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000 65532        0 1 1 0000000000000000 100 0 0 10 0
   1: 0D02F40A:9C40 0E02F40A:094B 01 00000000:00000000 02:000AF2F5 00000000 65532        0 2 1 0000000000000000 20 4 30 10 -1
   2: 0D02F40A:D6D8 0100600A:01BB 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000
`

const procNetTCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 65532        0 4 1 0000000000000000 100 0 0 10 0
   1: 0000000000000000FFFF00000D02F40A:B3A2 0000000000000000FFFF00000F01F40A:094F 02 00000000:00000000 00:00000000 00000000 65532        0 5 1 0000000000000000 100 0 0 10 0
   2: 000080FE00000000FF54D21A0A0BFEFF:0035 00000000000000000000000001000000:1F90 01 00000000:00000000 00:00000000 00000000 0 0 6 1 0000000000000000 100 0 0 10 0
`

func TestParseProcNetTCP(t *testing.T) {
	t.Parallel()
	ap := netip.MustParseAddrPort
	conns, err := ParseProcNetTCP(strings.NewReader(procNetTCP + strings.SplitN(procNetTCP6, "\n", 2)[1]))
	if err != nil {
		t.Fatal(err)
	}
	want := []TCPConn{
		{Local: ap("0.0.0.0:8081"), Remote: ap("0.0.0.0:0"), State: "LISTEN"},
		{Local: ap("10.244.2.13:40000"), Remote: ap("10.244.2.14:2379"), State: "ESTABLISHED"},
		{Local: ap("10.244.2.13:55000"), Remote: ap("10.96.0.1:443"), State: "TIME_WAIT"},
		{Local: ap("[::]:8080"), Remote: ap("[::]:0"), State: "LISTEN"},
		{Local: ap("10.244.2.13:45986"), Remote: ap("10.244.1.15:2383"), State: "SYN_SENT"},
		{Local: ap("[fe80::1ad2:54ff:fffe:b0a]:53"), Remote: ap("[::1]:8080"), State: "ESTABLISHED"},
	}
	if diff := cmp.Diff(want, conns, cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
		t.Errorf("connections (-want +got):\n%s", diff)
	}
	if _, err := ParseProcNetTCP(strings.NewReader("header\n 0: 0100007F 00000000:0000 0A\n")); err == nil {
		t.Error("an address without a port parsed")
	}
	if _, err := ParseProcNetTCP(strings.NewReader("header\n 0: 0100:0050 00000000:0000 0A\n")); err == nil {
		t.Error("a 2-byte address parsed")
	}
}

func TestParseMemoryAndActiveOpens(t *testing.T) {
	t.Parallel()
	status := "Name:\tetcd-operator\nPPid:\t17400\nVmHWM:\t   52340 kB\nVmRSS:\t   41876 kB\nThreads:\t9\n"
	m, err := ParseMemory([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS != 41876*1024 || m.HWM != 52340*1024 {
		t.Errorf("ParseMemory = %+v, want RSS 41876 KiB, HWM 52340 KiB", m)
	}
	if _, err := ParseMemory([]byte("Name:\tkthreadd\nPPid:\t0\n")); err == nil {
		t.Error("a status without VmRSS parsed")
	}
	snmp := "Ip: Forwarding DefaultTTL\nIp: 1 64\nTcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens\nTcp: 1 200 120000 -1 57 3\nUdp: InDatagrams\nUdp: 4\n"
	if n, err := ParseTCPActiveOpens([]byte(snmp)); err != nil || n != 57 {
		t.Errorf("ParseTCPActiveOpens = %d, %v; want 57", n, err)
	}
	if _, err := ParseTCPActiveOpens([]byte("Ip: Forwarding\nIp: 1\n")); err == nil {
		t.Error("snmp without Tcp parsed")
	}
}

// fakeProc lays out a proc tree: a shim (pid 10) outside the container, the container's main
// process (11) and its child (12), and an unrelated process (20).
func fakeProc(t *testing.T, id string) ProcFS {
	t.Helper()
	root := t.TempDir()
	procs := []struct {
		pid, ppid int
		cgroup    string
	}{
		{10, 1, "0::/system.slice/containerd.service\n"},
		{11, 10, "4:memory:/k8s.io/" + id + "\n0::/k8s.io/" + id + "\n"},
		{12, 11, "0::/k8s.io/" + id + "\n"},
		{20, 1, "0::/k8s.io/0123456789abcdef\n"},
	}
	for _, p := range procs {
		dir := filepath.Join(root, strconv.Itoa(p.pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{
			"cgroup": p.cgroup,
			"status": "Name:\tx\nPPid:\t" + strconv.Itoa(p.ppid) + "\nVmRSS:\t 100 kB\nVmHWM:\t 200 kB\n",
			// Field 22 (start time) is 4242 for every process here; the name has a space and a ')'.
			"stat": strconv.Itoa(p.pid) + " (a b) c) S " + strconv.Itoa(p.ppid) + " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 0 4242 100 5\n",
		}
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(root, "self"), nil, 0o644); err != nil { // not a pid
		t.Fatal(err)
	}
	return ProcFS{Root: root}
}

func TestContainerProcess(t *testing.T) {
	t.Parallel()
	id := "ef189c5aed7dad7f3b05ecc346cffeda47a7084ed70ec92f311618446df21dd9"
	p := fakeProc(t, id)
	pid, err := p.ContainerProcess(id)
	if err != nil || pid != 11 {
		t.Errorf("ContainerProcess = %d, %v; want 11 (the container's process whose parent is outside it)", pid, err)
	}
	if _, err := p.ContainerProcess("ffffffffffffffffffff"); !errors.Is(err, ErrNoProcess) {
		t.Errorf("unknown container: err = %v, want ErrNoProcess", err)
	}
	if _, err := p.ContainerProcess("abc"); err == nil {
		t.Error("a 3-character ID was searched for")
	}
	start, err := p.StartTime(11)
	if err != nil || start != 4242 {
		t.Errorf("StartTime = %d, %v; want 4242", start, err)
	}
	m, err := p.Memory(11)
	if err != nil || m.RSS != 100<<10 || m.HWM != 200<<10 {
		t.Errorf("Memory = %+v, %v", m, err)
	}
}

func TestHostProcOfThisProcess(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/net/tcp"); err != nil {
		t.Skip("no /proc here")
	}
	pid := os.Getpid()
	if _, err := HostProc.TCPConns(pid); err != nil {
		t.Errorf("TCPConns of this process: %v", err)
	}
	if _, err := HostProc.TCPActiveOpens(pid); err != nil {
		t.Errorf("TCPActiveOpens of this process: %v", err)
	}
	if m, err := HostProc.Memory(pid); err != nil || m.RSS <= 0 || m.HWM < m.RSS {
		t.Errorf("Memory of this process = %+v, %v", m, err)
	}
	if _, err := HostProc.StartTime(pid); err != nil {
		t.Errorf("StartTime of this process: %v", err)
	}
}
