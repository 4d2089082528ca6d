package tune

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/infscale/infscale/pkg/trace"
)

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
	reqs := make(map[int][]trace.Request, len(idx))
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
