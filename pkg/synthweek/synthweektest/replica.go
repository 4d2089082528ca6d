package synthweektest

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/infscale/infscale/pkg/synthweek"
)

// Replica shapes a history whose latencies come from known replica
// parameters, for calibration tests: Pods pods scraped every Scrape, each
// window of Window holding a constant batch and prompt length, so every
// window's means are exact (up to Noise). Zero fields take the defaults in brackets.
//
// In window i (the scrapes in (Start + i·Window, Start + (i+1)·Window])
// pod k runs Batches[(i+k) mod len] sequences (the running gauge), and
// requests with Prompts[(i+k) mod len] prompt tokens arrive at Arrivals per
// second and finish at the same rate with Output tokens each. Each decode
// token takes Step(batch, context) seconds, context being each sequence's
// tokens of KV, the window's prompt + Output / 2 (the ITL histogram: batch × scrape /
// step tokens per scrape interval, each observed at the step); each
// request's first token takes TTFT(prompt) seconds. Every QueuedEvery-th
// window (0: none) has 3 requests waiting throughout and its TTFTs are
// QueueDelay seconds longer: a calibration must leave those out.
// Series: up, vllm:num_requests_running, vllm:num_requests_waiting,
// vllm:request_success_total, vllm:prompt_tokens_total,
// vllm:generation_tokens_total, the histograms
// vllm:inter_token_latency_seconds (unless NoITL) and
// vllm:time_to_first_token_seconds; labels namespace="llm", pod="chat-N".
type Replica struct {
	// Start is the first scrape [2026-01-05T00:00:00Z].
	Start time.Time
	// Windows is the number of windows [240]; Window their length [1m];
	// Scrape the scrape interval [15s], dividing Window.
	Windows        int
	Window, Scrape time.Duration
	// Pods is the number of pods [2].
	Pods int
	// Batches and Prompts cycle over windows and pods [1, 2, 4, 8, 16, 32]
	// and [256, 768, 1280, 1792].
	Batches, Prompts []int
	// Arrivals is requests per second per pod [1]; Output tokens per
	// request [128].
	Arrivals float64
	Output   int
	// Step is the decode step in seconds at a batch whose sequences each
	// hold context tokens of KV; TTFT the time to first token in seconds
	// at a prompt length, with nothing queued. Required.
	Step func(batch, context int) float64
	TTFT func(prompt int) float64
	// QueuedEvery and QueueDelay place windows with a queue [0, 0.5 s].
	QueuedEvery int
	QueueDelay  float64
	// NoITL leaves the ITL histogram out.
	NoITL bool
	// Noise multiplies each pod's window's step and TTFT by exp(Noise ×
	// a standard normal draw), independently, seeded by Seed [0: exact].
	Noise float64
	Seed  uint64
}

// ReplicaTruth is what a Replica history holds, for tests.
type ReplicaTruth struct {
	// Start and End bound the scrapes (End is the last one).
	Start, End time.Time
	// Samples is the number of samples written.
	Samples int64
}

// itlBounds and ttftBounds are the ITL and TTFT buckets (le, seconds) of
// vLLM's histograms, a subset.
var (
	itlBounds  = []float64{0.01, 0.025, 0.05, 0.1, 0.25}
	ttftBounds = []float64{0.1, 0.25, 0.5, 1, 2.5}
)

func (c Replica) withDefaults() Replica {
	if c.Start.IsZero() {
		c.Start = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	}
	if c.Windows == 0 {
		c.Windows = 240
	}
	if c.Window == 0 {
		c.Window = time.Minute
	}
	if c.Scrape == 0 {
		c.Scrape = 15 * time.Second
	}
	if c.Pods == 0 {
		c.Pods = 2
	}
	if len(c.Batches) == 0 {
		c.Batches = []int{1, 2, 4, 8, 16, 32}
	}
	if len(c.Prompts) == 0 {
		c.Prompts = []int{256, 768, 1280, 1792}
	}
	if c.Arrivals == 0 {
		c.Arrivals = 1
	}
	if c.Output == 0 {
		c.Output = 128
	}
	if c.QueueDelay == 0 {
		c.QueueDelay = 0.5
	}
	return c
}

// WriteReplica writes the history c describes to w as OpenMetrics.
func WriteReplica(w io.Writer, cfg Replica) (ReplicaTruth, error) {
	c := cfg.withDefaults()
	if c.Step == nil || c.TTFT == nil {
		return ReplicaTruth{}, fmt.Errorf("synthweektest: Replica needs Step and TTFT")
	}
	if c.Window%c.Scrape != 0 {
		return ReplicaTruth{}, fmt.Errorf("synthweektest: window %s is not a multiple of the scrape %s", c.Window, c.Scrape)
	}
	per := int(c.Window / c.Scrape) // scrapes per window
	n := c.Windows*per + 1          // scrapes 0..n-1; scrape k > 0 is in window (k-1)/per
	dt := c.Scrape.Seconds()
	type series struct {
		name, labels string
		vals         []float64
	}
	fams := map[string][]series{}
	var order []string
	add := func(family, typ, name, labels string, vals []float64) {
		key := family + " " + typ
		if _, ok := fams[key]; !ok {
			order = append(order, key)
		}
		fams[key] = append(fams[key], series{name, labels, vals})
	}
	hist := func(family, labels string, bounds []float64, obs func(k int) (count, value float64)) {
		buckets := make([][]float64, len(bounds)+1)
		for j := range buckets {
			buckets[j] = make([]float64, n)
		}
		cnt, sum := make([]float64, n), make([]float64, n)
		for k := 1; k < n; k++ {
			c, v := obs(k)
			cnt[k], sum[k] = cnt[k-1]+c, sum[k-1]+c*v
			for j := range buckets {
				buckets[j][k] = buckets[j][k-1]
				if j == len(bounds) || v <= bounds[j] {
					buckets[j][k] += c
				}
			}
		}
		for j, b := range buckets {
			le := "+Inf"
			if j < len(bounds) {
				le = strconv.FormatFloat(bounds[j], 'f', -1, 64)
			}
			add(family, "histogram", family+"_bucket", labels+`,le="`+le+`"`, b)
		}
		add(family, "histogram", family+"_count", labels, cnt)
		add(family, "histogram", family+"_sum", labels, sum)
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x63616c6962))
	noise := func() []float64 {
		out := make([]float64, c.Windows)
		for i := range out {
			out[i] = math.Exp(c.Noise * rng.NormFloat64())
		}
		return out
	}
	for p := range c.Pods {
		stepNoise, ttftNoise := noise(), noise()
		labels := fmt.Sprintf(`namespace="llm",pod="chat-%d"`, p)
		window := func(k int) int { return max(k-1, 0) / per }
		batch := func(k int) int { return c.Batches[(window(k)+p)%len(c.Batches)] }
		prompt := func(k int) int { return c.Prompts[(window(k)+p)%len(c.Prompts)] }
		queued := func(k int) bool { return c.QueuedEvery > 0 && window(k)%c.QueuedEvery == c.QueuedEvery-1 }
		gauge := func(f func(k int) float64) []float64 {
			out := make([]float64, n)
			for k := range out {
				out[k] = f(k)
			}
			return out
		}
		counter := func(inc func(k int) float64) []float64 {
			out := make([]float64, n)
			for k := 1; k < n; k++ {
				out[k] = out[k-1] + inc(k)
			}
			return out
		}
		reqs := c.Arrivals * dt
		add("up", "gauge", "up", labels, gauge(func(int) float64 { return 1 }))
		add("vllm:num_requests_running", "gauge", "vllm:num_requests_running", labels, gauge(func(k int) float64 { return float64(batch(k)) }))
		add("vllm:num_requests_waiting", "gauge", "vllm:num_requests_waiting", labels, gauge(func(k int) float64 {
			if queued(k) {
				return 3
			}
			return 0
		}))
		add("vllm:request_success", "counter", "vllm:request_success_total", labels, counter(func(int) float64 { return reqs }))
		add("vllm:prompt_tokens", "counter", "vllm:prompt_tokens_total", labels, counter(func(k int) float64 { return reqs * float64(prompt(k)) }))
		add("vllm:generation_tokens", "counter", "vllm:generation_tokens_total", labels, counter(func(int) float64 { return reqs * float64(c.Output) }))
		if !c.NoITL {
			hist("vllm:inter_token_latency_seconds", labels, itlBounds, func(k int) (float64, float64) {
				s := c.Step(batch(k), prompt(k)+c.Output/2) * stepNoise[window(k)]
				return float64(batch(k)) * dt / s, s
			})
		}
		hist("vllm:time_to_first_token_seconds", labels, ttftBounds, func(k int) (float64, float64) {
			v := c.TTFT(prompt(k)) * ttftNoise[window(k)]
			if queued(k) {
				v += c.QueueDelay
			}
			return reqs, v
		})
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var tr ReplicaTruth
	tr.Start, tr.End = c.Start, c.Start.Add(time.Duration(n-1)*c.Scrape)
	e := &synthweek.Emitter{W: bw, Start: c.Start.Unix(), Step: int64(dt)}
	for _, key := range order {
		var family, typ string
		fmt.Sscan(key, &family, &typ)
		e.Family(family, typ)
		for _, s := range fams[key] {
			e.Series(s.name, s.labels, 0, s.vals)
		}
	}
	tr.Samples = e.Samples
	fmt.Fprintln(bw, "# EOF")
	if e.Err != nil {
		return tr, e.Err
	}
	return tr, bw.Flush()
}
