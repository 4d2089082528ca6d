// Package membudget tells how much memory the process may still take before
// it reaches its memory limit: GOMEMLIMIT, which the command sets at startup
// to 90% of the container's cgroup limit when the environment does not set it
// (github.com/KimMachineGun/automemlimit). Parsers whose cost is known per
// byte and per token (pkg/config) ask it before they build anything, so a
// file that would not fit is refused instead of OOM-killing the process.
package membudget

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
)

// Budget is the memory a new allocation may take, in bytes.
type Budget struct {
	// Limit is the process's memory limit (GOMEMLIMIT) in bytes; 0 when
	// there is none (no GOMEMLIMIT and no cgroup limit).
	Limit int64
	// Used is what the Go runtime holds now: live heap as of the last GC,
	// goroutine stacks and runtime metadata, in bytes.
	Used int64
	// Available is what may still be allocated with Headroom(Limit) kept
	// free: Limit - Used - Headroom(Limit), at least 0; math.MaxInt64
	// without a limit.
	Available int64
}

// Now reads the budget from the runtime. Without a limit, Available is
// math.MaxInt64 and callers keep only their absolute caps.
func Now() Budget { return Of(debug.SetMemoryLimit(-1), used()) }

// Of is the budget for a limit and current use, both in bytes; limit <= 0
// means none.
func Of(limit, used int64) Budget {
	if limit <= 0 || limit == math.MaxInt64 {
		return Budget{Used: used, Available: math.MaxInt64}
	}
	return Budget{Limit: limit, Used: used, Available: max(limit-used-Headroom(limit), 0)}
}

// Headroom is what a budget keeps free under a limit of limit bytes: an
// eighth of it plus 12 MiB, for the collector's overhead, fragmentation and
// the binary's own pages (which count against a container's limit but not
// against GOMEMLIMIT). With 8 MiB a parse of the largest document admitted
// under a 64 MiB limit peaked at up to 60.7 MiB resident on an idle machine
// and once at 66.0 MiB while other processes took both cores (the collector
// falls behind): the 4 MiB more keep it under the limit there
// (docs/evaluation/PERFORMANCE.md).
func Headroom(limit int64) int64 { return limit/8 + 12<<20 }

// used is the runtime's total mapped memory less the heap pages it could
// hand back (free, released) and less the dead objects not yet collected
// (heap objects minus the live heap of the last GC): what a collection
// would leave, which is what counts against the limit.
func used() int64 {
	s := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	metrics.Read(s)
	v := func(i int) int64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(s[i].Value.Uint64())
	}
	u := v(0) - v(1) - v(2)
	if dead := v(3) - v(4); dead > 0 && v(4) > 0 {
		u -= dead
	}
	return max(u, 0)
}
