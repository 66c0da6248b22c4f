package snapshotagent

import (
	"bytes"
	"os"
	"strconv"
)

// selfStatus is where Linux reports the agent's own memory
// (https://man7.org/linux/man-pages/man5/proc_pid_status.5.html).
const selfStatus = "/proc/self/status"

// peakRSS is the agent's peak resident set so far (VmHWM), in bytes, for the result: the issue's
// memory target is about the agent's peak, and the process itself is the one reader that never
// misses its last milliseconds. It includes the pages of the agent's binary, which the kernel
// maps as it runs. 0 when the kernel does not report it.
func peakRSS() int64 {
	data, err := os.ReadFile(selfStatus)
	if err != nil {
		return 0
	}
	return parsePeakRSS(data)
}

// parsePeakRSS reads the "VmHWM:  <n> kB" line of a /proc/<pid>/status; 0 when there is none.
func parsePeakRSS(status []byte) int64 {
	for line := range bytes.SplitSeq(status, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("VmHWM:"))
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 10, 64)
		if err != nil || kb < 0 {
			return 0
		}
		return kb << 10
	}
	return 0
}
