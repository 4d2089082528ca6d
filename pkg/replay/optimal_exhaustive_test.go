package replay

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	gpu "github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/trace"
)

// The hindsight optimum and its certified bound checked against the true
// optimum of tiny instances: every replica schedule on the decision grid (a
// warm start of 0..R replicas at second 0, then 0..R asked for at each
// tick) is replayed by a small simulator written here from the replay's
// documented rules (docs/simulate.md, Semantics), not by the code under
// test, and the cheapest schedule at each miss count is kept. Then the
// bound is at most that least replica time and at most optimal's (and its
// unmeetable count at most either's misses), optimal misses no more than
// the fewest any schedule misses, and no causal policy reaches optimal's
// misses at less than 0.99x its replica time
// (docs/evaluation/recommended.md). optimal above the grid's least is
// logged, not asserted: the search is not a proven optimum
// (docs/simulate.md, "Optimality gap"); it may be below it on a seed's
// finer tick (knative's 2 s).

// gridModel is a replica whose requests are served one prefill each: a
// prompt prefills at 1,000 tokens/s, the output is 1 token (the request
// completes at its first token, so there is no decode), at most batch
// requests prefill together (one phase of their summed prompt), and the KV
// cache holds kv tokens.
type gridModel struct {
	cold  float64
	batch int
	kv    int64
}

func (gridModel) StepTime(b int, c int64) float64 { return 0.01 }
func (gridModel) PrefillTime(t int) float64       { return float64(t) / 1000 }
func (m gridModel) KVCapacityTokens() int64       { return m.kv }
func (m gridModel) MaxBatch() int                 { return m.batch }
func (m gridModel) ColdStart() float64            { return m.cold }
func (gridModel) CPUPercent(running int) float64  { return 10 }

// gridCase is one tiny instance.
type gridCase struct {
	name   string
	model  gridModel
	period float64
	slo    float64
	end    float64 // the trace's declared span
	maxR   int     // replicas per tick the enumeration tries (0..maxR)
	reqs   []trace.Request
}

// handEval replays a schedule (init ready at 0; d[k-1] asked for at tick
// k·period, the last entry after) by the replay's rules: events at one
// instant go replica events first (ready, phase ends, by id), then the
// arrival, then the tick; an arrival goes to the ready replica with the
// fewest outstanding requests (ties: lowest id), else it is held until a
// replica is ready; a scale-down cancels the newest starting replica
// first, then drains the ready one with the fewest outstanding (ties:
// newest), which leaves when idle; replica time counts over [0, end].
func handEval(c gridCase, init int, d []int) (misses int, cost float64) {
	const drain = 600.0
	type rep struct {
		id       int
		added    float64
		readyAt  float64
		state    int // 0 starting, 1 ready, 2 draining
		gone     bool
		waiting  []int
		pre      []int
		kvRes    int64
		phaseEnd float64
	}
	var reps []*rep
	var held []int
	outstanding := 0
	lastTick := 0.0
	retire := func(r *rep, now float64) {
		r.gone = true
		cost += max(0, min(now, c.end)-r.added)
	}
	outst := func(r *rep) int { return len(r.waiting) + len(r.pre) }
	least := func() *rep {
		var best *rep
		for _, r := range reps {
			if !r.gone && r.state == 1 && (best == nil || outst(r) < outst(best)) {
				best = r
			}
		}
		return best
	}
	var startNext func(r *rep, now float64)
	startNext = func(r *rep, now float64) {
		tokens := 0
		for len(r.waiting) > 0 && len(r.pre) < c.model.batch {
			q := c.reqs[r.waiting[0]]
			res := int64(q.Prompt) + int64(q.Output)
			if r.kvRes+res > c.model.kv || (tokens > 0 && tokens+int(q.Prompt) > 8192) {
				break
			}
			r.pre = append(r.pre, r.waiting[0])
			r.waiting = r.waiting[1:]
			tokens += int(q.Prompt)
			r.kvRes += res
		}
		if len(r.pre) > 0 {
			r.phaseEnd = now + c.model.PrefillTime(tokens)
			return
		}
		r.phaseEnd = math.Inf(1)
		if r.state == 2 && outst(r) == 0 {
			retire(r, now)
		}
	}
	enqueue := func(r *rep, now float64, i int) {
		r.waiting = append(r.waiting, i)
		if len(r.pre) == 0 && math.IsInf(r.phaseEnd, 1) {
			startNext(r, now)
		}
	}
	ready := func(r *rep, now float64) {
		r.state, r.phaseEnd = 1, math.Inf(1)
		for len(held) > 0 {
			i := held[0]
			held = held[1:]
			enqueue(least(), now, i)
		}
	}
	add := func(now float64, warm bool) {
		r := &rep{id: len(reps), added: now, readyAt: now + c.model.cold, phaseEnd: math.Inf(1)}
		reps = append(reps, r)
		if warm {
			ready(r, now)
		}
	}
	scale := func(now float64, want int) {
		cur := 0
		for _, r := range reps {
			if !r.gone && r.state != 2 {
				cur++
			}
		}
		for ; cur < want; cur++ {
			add(now, false)
		}
		for ; cur > want; cur-- {
			var v *rep
			for i := len(reps) - 1; i >= 0; i-- {
				if r := reps[i]; !r.gone && r.state == 0 {
					v = r
					break
				}
			}
			if v != nil {
				retire(v, now)
				continue
			}
			for i := len(reps) - 1; i >= 0; i-- {
				if r := reps[i]; !r.gone && r.state == 1 && (v == nil || outst(r) < outst(v)) {
					v = r
				}
			}
			v.state = 2
			if outst(v) == 0 {
				retire(v, now)
			}
		}
	}
	for range init {
		add(0, true)
	}
	next, tick := 0, c.period
	for {
		// The earliest replica event (ties: lowest id).
		var er *rep
		tr := math.Inf(1)
		for _, r := range reps {
			if r.gone {
				continue
			}
			t := r.phaseEnd
			if r.state == 0 {
				t = r.readyAt
			}
			if t < tr {
				er, tr = r, t
			}
		}
		ta := math.Inf(1)
		if next < len(c.reqs) {
			ta = c.reqs[next].Arrival
		}
		t := min(tr, ta, tick)
		if next == len(c.reqs) && outstanding == 0 && t >= c.end {
			break
		}
		if t > c.end+drain {
			break
		}
		switch {
		case tr <= ta && tr <= tick:
			if er.state == 0 {
				ready(er, tr)
				break
			}
			for _, i := range er.pre {
				if tr-c.reqs[i].Arrival > c.slo {
					misses++ // late
				}
				outstanding--
			}
			er.kvRes, er.pre = 0, nil
			startNext(er, tr)
		case ta <= tick:
			q := c.reqs[next]
			if int64(q.Prompt)+int64(q.Output) > c.model.kv {
				misses++ // rejected
			} else if outstanding++; least() != nil {
				enqueue(least(), ta, next)
			} else {
				held = append(held, next)
			}
			next++
		default:
			k := int(math.Round(tick / c.period))
			want := d[min(k, len(d))-1]
			scale(tick, want)
			lastTick = tick
			tick += c.period
		}
	}
	misses += outstanding // unserved at the stop
	_ = lastTick
	for _, r := range reps {
		if !r.gone {
			cost += max(0, c.end-r.added)
		}
	}
	return misses, cost
}

// gridOptimum enumerates every schedule (warm start and one ask per tick
// up to the last tick before end + SLO, the asks after it kept) and
// returns the least replica time at each miss count.
func gridOptimum(c gridCase, visit func(init int, d []int, misses int, cost float64)) map[int]float64 {
	ticks := int(math.Ceil((c.end+c.slo)/c.period)) - 1
	best := map[int]float64{}
	d := make([]int, max(ticks, 1))
	var rec func(k int)
	var init int
	rec = func(k int) {
		if k == len(d) {
			m, cost := handEval(c, init, d)
			if v, ok := best[m]; !ok || cost < v {
				best[m] = cost
			}
			if visit != nil {
				visit(init, d, m, cost)
			}
			return
		}
		for x := 0; x <= c.maxR; x++ {
			d[k] = x
			rec(k + 1)
		}
	}
	for init = 0; init <= c.maxR; init++ {
		rec(0)
	}
	return best
}

func gridCases() []gridCase {
	r := func(a float64, p int32) trace.Request { return trace.Request{Arrival: a, Prompt: p, Output: 1} }
	m20 := gridModel{cold: 20, batch: 1, kv: 100000}
	return []gridCase{
		// One request at 45 s: a replica asked for at tick 20 (ready at
		// 40) and dropped at 50 after serving: 30 replica-seconds.
		{"one request", m20, 10, 2, 60, 2, []trace.Request{r(45, 500)}},
		// Requests at 3 (warm), 31 and 55 s.
		{"three apart", m20, 10, 2, 60, 2, []trace.Request{r(3, 500), r(31, 500), r(55, 500)}},
		// Three at once at 25 s, 1.5 s of prefill each: one replica meets
		// one, the others are late (1.5 + 1.5 > 2 s): three replicas meet all.
		{"burst of three", m20, 10, 2, 50, 3, []trace.Request{r(25, 1500), r(25.1, 1500), r(25.2, 1500)}},
		// As above, two prefilled together on a replica of batch 2 (3 s of
		// prefill: both late), so batching does not help.
		{"burst, batch 2", gridModel{cold: 20, batch: 2, kv: 100000}, 10, 2, 50, 3, []trace.Request{r(25, 1500), r(25.1, 1500), r(25.2, 1500)}},
		// Unmeetable requests: 3 s of prefill (> the 2 s SLO) and one over
		// the KV cache, beside a meetable one at 35 s.
		{"unmeetable", m20, 10, 2, 50, 2, []trace.Request{r(12, 3000), r(20, 100000), r(35, 500)}},
		// A trace shorter than the cold start: only the warm start serves.
		{"shorter than cold start", m20, 10, 2, 15, 2, []trace.Request{r(4, 500), r(12, 500)}},
		// Zero-length gaps: four requests at the same second.
		{"zero gaps", m20, 10, 2, 40, 3, []trace.Request{r(22, 900), r(22, 900), r(22, 900), r(22, 900)}},
		// A cold start of 0: a replica asked for at a tick serves at once.
		{"cold start 0", gridModel{cold: 0, batch: 1, kv: 100000}, 10, 2, 60, 2, []trace.Request{r(0, 500), r(20, 500), r(41, 500), r(59, 500)}},
		// A short cold start (5 s) and a busy middle.
		{"cold start 5", gridModel{cold: 5, batch: 1, kv: 100000}, 10, 2, 60, 2, []trace.Request{r(1, 500), r(24, 1200), r(24.5, 1200), r(47, 500)}},
		// A request that cannot be met even on an idle replica, alone.
		{"never meetable", m20, 10, 2, 30, 2, []trace.Request{r(5, 2500)}},
		// A warm start above the first ask (TestOptimalLowersWarmStart).
		{"warm start above the first ask", m20, 10, 2, 60, 2, []trace.Request{r(33.1, 3000), r(46.2, 500)}},
	}
}

// TestOptimalAgainstExhaustive is the check above on each tiny instance.
func TestOptimalAgainstExhaustive(t *testing.T) {
	for _, c := range gridCases() {
		t.Run(c.name, func(t *testing.T) {
			src := trace.FromSlice(c.name, c.end, c.reqs)
			cfg := Config{Model: c.model, Period: c.period, SLOTTFT: c.slo}
			// The hand simulator is the replay's rules: it agrees with the
			// replay on every schedule it enumerates (a sample of them, every
			// 7th, to keep the test short).
			n := 0
			best := gridOptimum(c, func(init int, d []int, misses int, cost float64) {
				n++
				if n%7 != 0 {
					return
				}
				pol, err := Follow("sched", c.period, append([]float64{float64(init)}, ints2f(d)...))
				if err != nil {
					t.Fatal(err)
				}
				res, err := Run(context.Background(), src, pol, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if res.Misses() != int64(misses) || math.Abs(res.ReplicaSeconds-cost) > 1e-6 {
					t.Fatalf("schedule %d %v: replay %d misses %.6f s, hand %d misses %.6f s", init, d, res.Misses(), res.ReplicaSeconds, misses, cost)
				}
			})
			keys := make([]int, 0, len(best))
			for m := range best {
				keys = append(keys, m)
			}
			slices.Sort(keys)
			fewest := keys[0]
			trueCost := best[fewest]

			specs := append([]string{"optimal"}, defaultSetForTest...)
			for i := 1; i <= 6; i++ {
				specs = append(specs, fmt.Sprintf("fixed:%d", i))
			}
			res := runPolicies(t, src, cfg, specs...)
			opt := res[0]
			lb := opt.LowerBound
			t.Logf("true optimum %d misses at %.3f s (pareto %v); optimal %d at %.3f s; bound %d at %.3f s",
				fewest, trueCost, best, opt.Misses(), opt.ReplicaSeconds, lb.Unmeetable, lb.ReplicaSeconds)
			if lb.Unmeetable > int64(fewest) {
				t.Errorf("bound: %d unmeetable, but a schedule misses only %d", lb.Unmeetable, fewest)
			}
			if lb.Unmeetable == int64(fewest) && lb.ReplicaSeconds > trueCost+1e-9 {
				t.Errorf("bound %.4f s above the true optimum %.4f s at %d misses", lb.ReplicaSeconds, trueCost, fewest)
			}
			// optimal's schedule is on the period's grid or, from a seed,
			// on the seed's own finer tick (knative's 2 s): it may beat the
			// grid, never miss more than its fewest.
			if opt.Misses() > int64(fewest) {
				t.Errorf("optimal misses %d, the fewest any schedule misses is %d (at %.3f s)", opt.Misses(), fewest, trueCost)
			}
			if lb.Unmeetable > opt.Misses() || (lb.Unmeetable == opt.Misses() && lb.ReplicaSeconds > opt.ReplicaSeconds+1e-9) {
				t.Errorf("bound %d misses at %.4f s above optimal's %d at %.4f s", lb.Unmeetable, lb.ReplicaSeconds, opt.Misses(), opt.ReplicaSeconds)
			}
			if opt.Misses() == int64(fewest) && opt.ReplicaSeconds > trueCost*1.01+1e-9 {
				// Not a proven optimum (docs/simulate.md, "Optimality gap").
				t.Logf("gap: optimal %.3f s, the grid's least %.3f s at %d misses (%.2fx)", opt.ReplicaSeconds, trueCost, fewest, opt.ReplicaSeconds/trueCost)
			}
			for _, r := range res[1:] {
				if r.Misses() < opt.Misses() || (r.Misses() == opt.Misses() && r.ReplicaSeconds < 0.99*opt.ReplicaSeconds) {
					t.Errorf("%s: %d misses at %.3f s beats optimal's %d at %.3f s", r.Policy, r.Misses(), r.ReplicaSeconds, opt.Misses(), opt.ReplicaSeconds)
				}
			}
		})
	}
}

// defaultSetForTest is simulate's default set without optimal.
var defaultSetForTest = []string{"cpu:60", "cpu:25", "queue:24", "queue:24,lookahead=90", "queue:24,min=0,cooldown=120",
	"knative:16", "hpa(recommended)", "recommended", "oracle"}

func ints2f(d []int) []float64 {
	out := make([]float64, len(d))
	for i, v := range d {
		out[i] = float64(v)
	}
	return out
}

// TestOptimalBelowKnative: `optimal` asks for replicas at its period's
// ticks, `knative:16` at Knative's 2 s tick, so where the cold start is
// short next to the period, knative's schedule was cheaper than any the
// search found: here 2 replica-seconds against 10. Its recorded schedule,
// replayed on its own tick, is now a seed like the other causal policies'.
//
// Worked by hand: a replica of cold start 0, one request at 0.3 s (116
// tokens: 0.116 s of prefill), a 10 s period, a 30 s trace. On a 2 s tick
// the least is one replica over [0, 2] (warm, dropped at the first tick,
// the request long served) or [2, 4] (asked for at 2, it serves the held
// request at once: first token at 2.116, 1.816 s after its arrival, within
// the 2 s SLO): 2 replica-seconds, no miss, and no replica lives less than
// a tick. On the 10 s grid the least is 10 (the warm one to the tick at
// 10, or one from 10: 9.8 s late).
func TestOptimalBelowKnative(t *testing.T) {
	src := trace.FromSlice("one", 30, []trace.Request{{Arrival: 0.3, Prompt: 116, Output: 1}})
	res := runPolicies(t, src, Config{Model: gridModel{cold: 0, batch: 1, kv: 100000}, Period: 10}, "optimal", "knative:16")
	opt, kn := res[0], res[1]
	if opt.Misses() != 0 || !near(opt.ReplicaSeconds, 2) {
		t.Errorf("optimal: %d misses at %g replica-seconds; want 0 at 2", opt.Misses(), opt.ReplicaSeconds)
	}
	if kn.Misses() < opt.Misses() || (kn.Misses() == opt.Misses() && kn.ReplicaSeconds < opt.ReplicaSeconds-1e-9) {
		t.Errorf("knative:16 %d misses at %g replica-seconds beats optimal's %d at %g", kn.Misses(), kn.ReplicaSeconds, opt.Misses(), opt.ReplicaSeconds)
	}
}

// TestOptimalAgainstExhaustiveRandom is TestOptimalAgainstExhaustive's
// check (fixed:1, fixed:2 and the default set against optimal) on 300
// random tiny instances (seeded): one to five requests of
// 0.1-2.7 s of prefill in a 30-60 s trace, cold starts of 0, 5, 20 and
// 35 s, batches of 1 and 2, a 10 s period, schedules of 0-2 replicas. It
// logs how often optimal is above the grid's least replica time, and by
// how much at most (docs/simulate.md, "Optimality gap").
func TestOptimalAgainstExhaustiveRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var above [2]int // at no miss, at some
	worst := 1.0
	for i := range 300 {
		m := gridModel{cold: []float64{0, 5, 20, 35}[rng.IntN(4)], batch: 1 + rng.IntN(2), kv: 100000}
		end := 30 + 10*float64(rng.IntN(4))
		reqs := make([]trace.Request, 1+rng.IntN(5))
		for j := range reqs {
			reqs[j] = trace.Request{Arrival: float64(rng.IntN(int(end*10))) / 10, Prompt: int32(100 + rng.IntN(2600)), Output: 1}
		}
		slices.SortStableFunc(reqs, func(a, b trace.Request) int { return cmp.Compare(a.Arrival, b.Arrival) })
		c := gridCase{name: fmt.Sprint(i), model: m, period: 10, slo: 2, end: end, maxR: 2, reqs: reqs}
		best := gridOptimum(c, nil)
		fewest := slices.Min(slices.Collect(maps.Keys(best)))
		res := runPolicies(t, trace.FromSlice(c.name, c.end, c.reqs), Config{Model: m, Period: c.period, SLOTTFT: c.slo}, append([]string{"optimal", "fixed:1", "fixed:2"}, defaultSetForTest...)...)
		opt, lb := res[0], res[0].LowerBound
		if lb.Unmeetable > int64(fewest) || (lb.Unmeetable == int64(fewest) && lb.ReplicaSeconds > best[fewest]+1e-9) {
			t.Errorf("instance %d (cold %g, %v): bound %d at %.4f s above the grid's least %d at %.4f s", i, m.cold, reqs, lb.Unmeetable, lb.ReplicaSeconds, fewest, best[fewest])
		}
		if opt.Misses() > int64(fewest) {
			t.Errorf("instance %d (cold %g, %v): optimal misses %d, a schedule %d", i, m.cold, reqs, opt.Misses(), fewest)
		}
		if opt.Misses() == int64(fewest) && opt.ReplicaSeconds > best[fewest]*1.01+1e-9 {
			above[min(fewest, 1)]++
			if best[fewest] > 0 {
				worst = max(worst, opt.ReplicaSeconds/best[fewest])
			}
			t.Logf("instance %d (cold %g, batch %d, end %g, %v): optimal %.3f s, the grid's least %.3f s at %d misses", i, m.cold, m.batch, end, reqs, opt.ReplicaSeconds, best[fewest], fewest)
		}
		for _, r := range res[1:] {
			if r.Misses() < opt.Misses() || (r.Misses() == opt.Misses() && r.ReplicaSeconds < 0.99*opt.ReplicaSeconds) {
				t.Errorf("instance %d (cold %g, %v): %s %d misses at %.3f s beats optimal's %d at %.3f s", i, m.cold, reqs, r.Policy, r.Misses(), r.ReplicaSeconds, opt.Misses(), opt.ReplicaSeconds)
			}
		}
	}
	t.Logf("optimal above the grid's least by more than 1%%: %d of 300 instances where it misses none, %d where some misses cannot be avoided; %.2fx at most where the least is not 0", above[0], above[1], worst)
}

// TestOptimalFarTrace: a trace longer than 2^23 ticks of knative:16's 2 s
// (194 days) but within 2^23 periods is replayed by every policy but
// knative; optimal's knative seed is left out there, not an error.
// Worked by hand (a 600 s period, cold start 20 s): one request at 0 (the
// warm replica, dropped at the first tick: 600 s) and one at 200 days
// (17,280,000 s: a replica asked for at the tick 600 s before, ready 580 s
// before it arrives, to the trace's end: 600 s): 1,200 replica-seconds at
// least, no miss.
func TestOptimalFarTrace(t *testing.T) {
	reqs := []trace.Request{{Arrival: 0, Prompt: 500, Output: 1}, {Arrival: 200 * 86400, Prompt: 500, Output: 1}}
	pol, err := ParsePolicy("optimal")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), trace.FromSlice("far", 0, reqs), pol, Config{Model: gridModel{cold: 20, batch: 1, kv: 100000}, Period: 600})
	if err != nil {
		t.Fatal(err)
	}
	if res.Misses() != 0 || res.ReplicaSeconds < 1200-1e-9 {
		t.Errorf("optimal: %d misses at %g replica-seconds; want 0 at >= 1200", res.Misses(), res.ReplicaSeconds)
	}
}

// TestBoundBelowEveryPolicy holds the certified bound to the replay with
// the full replica model (decode, batch slots, KV, chunked and stalled
// prefill, a small max_num_batched_tokens), on 40 random traces of 1-11
// minutes (Poisson, or bursts of 1-30 requests of up to 60,000 prompt and
// 800 output tokens), cold starts up to 104 s, periods of 5, 15 and 30 s
// and SLOs of 0.5, 2 and 5 s: no policy misses fewer requests than the
// bound's unmeetable ones, nor, missing as many, costs less than it. And
// none of the default set or fixed:1..6 (optimal's seeds) reaches
// optimal's misses at less than 0.99x its replica time. A fixed count
// beyond the seeds can miss fewer (logged): the search's fewest misses
// are its own (docs/simulate.md, "Optimality gap").
//
// Then 24 traces where decode residency binds: 1-8 batch slots
// (--max-num-seqs), a KV cache of 5,000-60,000 tokens, outputs of
// 200-4,000 tokens (1.4-27 s of decoding at the least step) and prompts
// of 50-3,000; the residency rule must decide the bound on some of them.
func TestBoundBelowEveryPolicy(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	coldStart := func() gpu.Config {
		c := gpu.DefaultConfig()
		c.ImagePull = time.Duration(rng.IntN(60)) * time.Second
		c.WarmUp = time.Duration(rng.IntN(30)) * time.Second
		if rng.IntN(2) == 0 {
			c.WeightLoadBytesPerSecond = 1e12
		}
		return c
	}
	bursts := func(dur float64, prompt, output int) []trace.Request {
		var reqs []trace.Request
		for at := 0.0; at < dur; {
			at += rng.ExpFloat64() * 5
			for range 1 + rng.IntN(30) {
				reqs = append(reqs, trace.Request{Arrival: at, Prompt: int32(50 + rng.IntN(prompt)), Output: int32(1 + rng.IntN(output))})
			}
		}
		return reqs
	}
	check := func(name string, m *gpu.Replica, src trace.Source) *Bound {
		cfg := Config{Model: m, Period: []float64{5, 15, 30}[rng.IntN(3)], SLOTTFT: []float64{0.5, 2, 5}[rng.IntN(3)]}
		if rng.IntN(3) == 0 {
			cfg.Prefill = PrefillStall
		}
		if rng.IntN(3) == 0 {
			cfg.MaxBatchedTokens = 512 + rng.IntN(4096)
		}
		specs := append([]string{"optimal", "fixed:1", "fixed:2", "fixed:4", "fixed:6"}, defaultSetForTest...)
		specs = append(specs, "fixed:8", "fixed:16")
		res := runPolicies(t, src, cfg, specs...)
		opt, lb := res[0], res[0].LowerBound
		for j, r := range res {
			if r.Misses() < lb.Unmeetable || (r.Misses() == lb.Unmeetable && r.ReplicaSeconds < lb.ReplicaSeconds-1e-9) {
				t.Errorf("trace %s (cold start %.0f s, period %g s, SLO %g s): %s %d misses at %.1f s below the bound's %d at %.1f s", name, m.ColdStart(), cfg.Period, cfg.SLOTTFT, r.Policy, r.Misses(), r.ReplicaSeconds, lb.Unmeetable, lb.ReplicaSeconds)
			}
			if j == 0 || !(r.Misses() < opt.Misses() || (r.Misses() == opt.Misses() && r.ReplicaSeconds < 0.99*opt.ReplicaSeconds)) {
				continue
			}
			if j >= len(specs)-2 {
				t.Logf("trace %s (cold start %.0f s, period %g s, SLO %g s): %s %d misses at %.1f s, optimal %d at %.1f s", name, m.ColdStart(), cfg.Period, cfg.SLOTTFT, r.Policy, r.Misses(), r.ReplicaSeconds, opt.Misses(), opt.ReplicaSeconds)
				continue
			}
			t.Errorf("trace %s (cold start %.0f s, period %g s, SLO %g s): %s %d misses at %.1f s beats optimal's %d at %.1f s", name, m.ColdStart(), cfg.Period, cfg.SLOTTFT, r.Policy, r.Misses(), r.ReplicaSeconds, opt.Misses(), opt.ReplicaSeconds)
		}
		return lb
	}
	for i := range 40 {
		m, err := gpu.New(coldStart())
		if err != nil {
			t.Fatal(err)
		}
		dur := 60 + float64(rng.IntN(600))
		var src trace.Source
		if rng.IntN(3) == 0 {
			src = trace.Synthetic{Rate: 0.2 + 20*rng.Float64(), Duration: dur, Prompt: trace.ReferenceShape.Prompt, Output: trace.ReferenceShape.Output, Seed: uint64(i)}.Source()
		} else {
			src = trace.FromSlice(fmt.Sprint(i), 0, bursts(dur, 60000, 800))
		}
		check(fmt.Sprint(i), m, src)
	}
	decided := 0
	for i := range 24 {
		c := coldStart()
		c.MaxNumSeqs = 1 + rng.IntN(8)
		base, err := gpu.New(c)
		if err != nil {
			t.Fatal(err)
		}
		kv := 5000 + rng.IntN(55000)
		c.ReserveBytes += base.KVFreeBytes() - float64(kv)*base.KVBytesPerToken()
		m, err := gpu.New(c)
		if err != nil {
			t.Fatal(err)
		}
		dur := 60 + float64(rng.IntN(600))
		var reqs []trace.Request
		if rng.IntN(3) == 0 {
			rate := 0.1 + 3*rng.Float64()
			for at := rng.ExpFloat64() / rate; at < dur; at += rng.ExpFloat64() / rate {
				reqs = append(reqs, trace.Request{Arrival: at, Prompt: int32(50 + rng.IntN(2950)), Output: int32(200 + rng.IntN(3800))})
			}
		} else {
			reqs = bursts(dur, 2950, 4000)
		}
		name := fmt.Sprintf("resident %d (%d slots, %d KV tokens)", i, m.MaxBatch(), m.KVCapacityTokens())
		if lb := check(name, m, trace.FromSlice(name, 0, reqs)); lb.residency > 1e-6 {
			decided++
			t.Logf("trace %s: the residency rule adds %.1f of the bound's %.1f replica-seconds", name, lb.residency, lb.ReplicaSeconds)
		}
	}
	if decided < 6 {
		t.Errorf("the residency rule raised the bound on %d of 24 traces built for it; want at least 6", decided)
	}
}

// TestOptimalLowersWarmStart: a request at 33.1 s that no replica can
// meet (3 s of prefill against the 2 s SLO) and one at 46.2 s, a 20 s
// cold start, 10 s ticks. The one met needs a replica ready by 48.2 s:
// asked for at tick 20 at the latest (ready at 40; tick 30 would be ready
// at 50, 3.8 s late), kept until it has answered (the 33.1 s request,
// queued until 40, is done at 43; the 46.2 s one at 46.7) and dropped at
// tick 50: 30 replica-seconds, the least of any schedule, with the one
// miss no schedule avoids. The search kept a seed's warm replica from
// second 0 to the first tick besides: 40. The warm start is now lowered
// on its own.
func TestOptimalLowersWarmStart(t *testing.T) {
	c := gridCases()[len(gridCases())-1]
	src := trace.FromSlice(c.name, c.end, c.reqs)
	res := runPolicies(t, src, Config{Model: c.model, Period: c.period, SLOTTFT: c.slo}, "optimal")
	if o := res[0]; o.Misses() != 1 || math.Abs(o.ReplicaSeconds-30) > 1e-6 {
		t.Errorf("optimal %d misses at %.3f replica-seconds, want 1 at 30", o.Misses(), o.ReplicaSeconds)
	}
}
