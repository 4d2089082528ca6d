package tune

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/infscale/infscale/internal/membudget"
	"github.com/infscale/infscale/pkg/trace"
)

// requestBytes is one trace.Request in memory (16 bytes).
const requestBytes = int64(unsafe.Sizeof(trace.Request{}))

// windowsFit refuses screening windows whose held requests, requestBytes
// each, exceed what budget still allows (membudget: the process's memory
// limit less what it holds and a headroom), naming the trace, the count
// and the bytes, and what to do.
func windowsFit(name string, held int64, n int, w float64, budget membudget.Budget) error {
	need := held * requestBytes
	if need <= budget.Available {
		return nil
	}
	return fmt.Errorf("%s: the %d screening windows of %gs hold %d requests, %.1f MiB in memory, more than the %.1f MiB this process may still take (memory limit %.1f MiB): replay a lower rate (--rate-scale below 1 stretches the trace) or a shorter part (--window), or give the process more memory",
		name, n, w, held, float64(need)/(1<<20), float64(budget.Available)/(1<<20), float64(budget.Limit)/(1<<20))
}

// screening picks the sample the grid is screened on: the whole in-sample,
// or its busiest, steepest and evenly spread windows.
func screening(ctx context.Context, in trace.Source, cfg Config) ([]trace.Source, string, error) {
	n, w := cfg.ScreenWindows, cfg.ScreenWindow
	if in.Duration <= float64(n)*w {
		return []trace.Source{in}, "the whole in-sample part", nil
	}
	counts := make([]int, int(math.Ceil(in.Duration/w)))
	if err := each(ctx, in, func(q trace.Request) {
		if i := int(q.Arrival / w); i >= 0 && i < len(counts) {
			counts[i]++
		}
	}); err != nil {
		return nil, "", err
	}
	pick := map[int]bool{}
	busiest, steepest := 0, 1
	for i := range counts {
		if counts[i] > counts[busiest] {
			busiest = i
		}
		if i > 0 && steepest < len(counts) && counts[i]-counts[i-1] > counts[steepest]-counts[steepest-1] {
			steepest = i
		}
	}
	pick[busiest] = true
	if steepest < len(counts) {
		pick[steepest] = true
	}
	for k := 0; len(pick) < n && k < len(counts); k++ {
		pick[(k*len(counts)/n+len(counts)/(2*n))%len(counts)] = true
	}
	var idx []int
	for i := range pick {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	// The windows are read into memory once (n x w seconds of requests):
	// a window of a stream would skip everything before it on every pass.
	// Their requests are counted: refused before the read when they would
	// not fit the memory budget (a dense trace took the machine's memory).
	reqs := make(map[int][]trace.Request, len(idx))
	var held int64
	for _, i := range idx {
		held += int64(counts[i])
	}
	if err := windowsFit(in.Name, held, len(idx), w, membudget.Now()); err != nil {
		return nil, "", err
	}
	for _, i := range idx {
		reqs[i] = make([]trace.Request, 0, counts[i])
	}
	if err := each(ctx, in, func(q trace.Request) {
		if i := int(q.Arrival / w); pick[i] {
			q.Arrival -= float64(i) * w
			reqs[i] = append(reqs[i], q)
		}
	}); err != nil {
		return nil, "", err
	}
	var out []trace.Source
	var names []string
	for _, i := range idx {
		a := float64(i) * w
		out = append(out, trace.FromSlice(fmt.Sprintf("%s [%gs,%gs)", in.Name, a, a+w), w, reqs[i]))
		names = append(names, fmt.Sprintf("%gh", a/3600))
	}
	return out, fmt.Sprintf("%d windows of %gs of the in-sample part (starting at %s)", len(out), w, strings.Join(names, ", ")), nil
}
