package framework

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// ProcessCPUSeconds is the user+system CPU time of pid from /proc.
func ProcessCPUSeconds(t testing.TB, pid int) float64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15 (1-based), in clock ticks of 1/100 s on Linux.
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100
}

// ProcessPeakRSS is pid's peak resident set size (VmHWM) in bytes.
func ProcessPeakRSS(t testing.TB, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb * 1024
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}
