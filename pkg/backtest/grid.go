package backtest

import (
	"fmt"
	"time"
)

// Grid is the step grid of a backtest: points Start + i·Step for
// i = 0..N; step j (1..N) is the interval (point j-1, point j].
type Grid struct {
	Start time.Time
	Step  time.Duration
	N     int
}

// MaxSteps bounds a grid: 2^22 steps (48 days at a 1 s step, 4 years at
// 30 s). Every step is a point of every range query and of the replay.
const MaxSteps = 1 << 22

// MinStep is the shortest step: Prometheus scrapes at most once a second,
// so a shorter step only repeats samples, at a point per millisecond
// (--step 1ms over an hour held 1.2 GB after a minute of queries).
const MinStep = time.Second

// NewGrid covers [start, end] with steps of step (end is rounded down to
// the grid). Errors: step below MinStep, end not after start by at least a
// step, or more than MaxSteps steps.
func NewGrid(start, end time.Time, step time.Duration) (Grid, error) {
	if step < MinStep {
		return Grid{}, fmt.Errorf("step %s: want at least %s", step, MinStep)
	}
	n := int(end.Sub(start) / step)
	if n < 1 {
		return Grid{}, fmt.Errorf("range %s..%s is shorter than one step (%s): want a longer range or a shorter step", start.Format(time.RFC3339), end.Format(time.RFC3339), step)
	}
	if n > MaxSteps {
		return Grid{}, fmt.Errorf("range %s..%s at a %s step is %d steps: want at most %d (a longer step or a shorter range)", start.Format(time.RFC3339), end.Format(time.RFC3339), step, n, MaxSteps)
	}
	return Grid{Start: start, Step: step, N: n}, nil
}

// End is the last point, Start + N·Step.
func (g Grid) End() time.Time { return g.Start.Add(time.Duration(g.N) * g.Step) }

// At is point i.
func (g Grid) At(i int) time.Time { return g.Start.Add(time.Duration(i) * g.Step) }

// sec converts t to seconds since Start.
func (g Grid) sec(t time.Time) float64 { return t.Sub(g.Start).Seconds() }

// spread adds amount, spread uniformly over (a, b] (seconds since Start),
// to the steps it overlaps (clipped to the grid); out has N+1 entries and
// out[j] is step j. With a == b the whole amount lands in the step holding b.
// It returns the part that fell outside the grid.
func (g Grid) spread(out []float64, a, b, amount float64) float64 {
	st := g.Step.Seconds()
	end := float64(g.N) * st
	if b <= a {
		j := int(ceilDiv(b, st))
		if j < 1 || j > g.N {
			return amount
		}
		out[j] += amount
		return 0
	}
	outside := 0.0
	width := b - a
	lo, hi := a, b
	if lo < 0 {
		outside += amount * (0 - lo) / width
		lo = 0
	}
	if hi > end {
		outside += amount * (hi - end) / width
		hi = end
	}
	for x := lo; x < hi; {
		j := int(x/st) + 1 // step holding (x, ...]
		top := min(float64(j)*st, hi)
		if top <= x { // floating point at a boundary
			j++
			top = min(float64(j)*st, hi)
		}
		out[j] += amount * (top - x) / width
		x = top
	}
	return outside
}

func ceilDiv(x, st float64) float64 {
	q := x / st
	if q == float64(int(q)) {
		return q
	}
	return float64(int(q) + 1)
}
