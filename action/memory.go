package action

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
)

// serveGCPercent is serve's garbage collector target (GOGC) once its cluster view is synced,
// unless the environment sets one. serve holds the cluster view for its lifetime (about 24 MB
// of heap at 10,000 nodes: names and interned labels), and each admission request leaves
// about 100 KB of short-lived garbage: with Go's default of 100 the collector re-marks the
// view every few hundred requests, and its mark phases are where the latency tail is. 400
// marks a quarter as often as 100 for a heap of about 120 MB at 10,000 nodes under load; the
// soft memory limit below makes the collector work harder before a container's limit.
const serveGCPercent = 400

// cgroupMemoryFiles hold the memory limit of the process's cgroup (v2, then v1).
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// setGCPercent sets GOGC=serveGCPercent unless the environment sets GOGC.
func setGCPercent(log logr.Logger) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
		log.V(1).Info("garbage collector target", "gcPercent", serveGCPercent)
	}
}

// softMemoryPercent is the part of the memory limit serve keeps its Go memory under (a soft
// limit, GOMEMLIMIT): above it the collector runs sooner than GOGC says. The rest is headroom
// for what the collector does not bound (the binary's mapped pages, about 60 MiB of its
// resident set, and a burst of requests in flight). At 100,000 nodes and 1,000 drivers, with
// the audit and under admission load, serve's peak RSS is about 200 MiB with the chart's
// 256Mi (make bench-scale; docs/sizing.md); at 40% its live heap of about 50 MB left the
// collector so little room that it ran a dozen times a second.
const softMemoryPercent = 55

// setMemoryLimit sets a soft memory limit (GOMEMLIMIT) of softMemoryPercent of limit, or,
// when limit is 0, of the memory limit of the process's cgroup (a container's), unless the
// environment sets GOMEMLIMIT.
func setMemoryLimit(log logr.Logger, limit int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	from := "--memory-limit"
	if limit <= 0 {
		var ok bool
		if limit, from, ok = cgroupMemoryLimit(cgroupMemoryFiles); !ok {
			return
		}
	}
	soft := limit / 100 * softMemoryPercent
	debug.SetMemoryLimit(soft)
	log.V(1).Info("soft memory limit", "from", from, "limitBytes", limit, "softLimitBytes", soft)
}

// cgroupMemoryLimit reads the first of files that holds a limit ("max", absent or an
// effectively unlimited value mean none).
func cgroupMemoryLimit(files []string) (int64, string, bool) {
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, "", false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || n >= 1<<62 {
			return 0, "", false
		}
		return n, f, true
	}
	return 0, "", false
}

// largeValuesInput is the size above which a values file is read under a soft memory limit
// (only files beyond the default --max-values-size can be this large).
const largeValuesInput = 32 << 20

// limitMemoryForValues sets, while values files larger than largeValuesInput are read and
// judged, a soft memory limit (GOMEMLIMIT) of four times the largest, unless the environment
// sets GOMEMLIMIT: the YAML parser grows a long scalar by copying it, and the collector then
// returns that garbage to the system as it goes, so that such a file is judged in about five
// times its size. Standard input counts as large as its limit. It returns the function that
// restores the previous limit.
func limitMemoryForValues(files []string, limit int64) func() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	var largest int64
	for _, f := range files {
		size := limit
		if strings.TrimSpace(f) != "-" {
			info, err := os.Stat(f)
			if err != nil || !info.Mode().IsRegular() {
				continue
			}
			size = min(info.Size(), limit)
		}
		largest = max(largest, size)
	}
	if largest <= largeValuesInput {
		return func() {}
	}
	prev := debug.SetMemoryLimit(4 * largest)
	return func() { debug.SetMemoryLimit(prev) }
}
