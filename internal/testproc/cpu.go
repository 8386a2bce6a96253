package testproc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ReportCPU starts counting the process's CPU time and returns what
// reports it per operation, as cpu-ns/op, when the benchmark ends. On a
// machine shared with other work, wall time per operation depends on how
// much CPU the benchmark was given; CPU time per operation much less so,
// which makes it the steadier figure to compare two benchmarks of one run by. It
// is read from /proc/self/stat in clock ticks (10 ms), so it means little
// for runs much shorter than a second, and is left out where /proc is not.
func ReportCPU(b *testing.B) func() {
	start, ok := processCPU()
	return func() {
		end, ok2 := processCPU()
		if ok && ok2 && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// processCPU is the process's user and system CPU time from /proc/self/stat,
// whose fields 14 and 15 count clock ticks of 1/100 s (USER_HZ, 100 on Linux).
func processCPU() (time.Duration, bool) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	// The command name, field 2, may hold spaces; the fields after it do not.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}
