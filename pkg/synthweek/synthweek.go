// Package synthweek writes a synthetic week of vLLM fleet metrics as
// OpenMetrics text, the way Prometheus would have stored it, together with
// the ground truth that produced it. `infscale synth-week` and the backtest
// and profile tests load it into a real Prometheus TSDB with `promtool tsdb
// create-blocks-from openmetrics` and read it back only through the HTTP API.
//
// The week (Config's defaults) starts on a Monday at 00:00 UTC and has:
//   - a daily cycle peaking at PeakHour (UTC) and a weekend dip (Saturday
//     and Sunday traffic × WeekendFactor);
//   - a 30-minute spike (Wednesday 10:00-10:30, rate × 3);
//   - a pod restarted in place (Tuesday 13:00: same pod name, every counter
//     and histogram of that pod reset to 0, the requests it held aborted);
//   - a rollout (Thursday 09:00): every pod replaced by pods with new names;
//   - scale-ups and -downs every 5 minutes following the rate, new pods under
//     new names (kube_deployment_spec_replicas records the spec);
//   - a 20-minute scrape gap (Friday 16:00-16:20): no sample of any series.
//
// Series (labels namespace, pod; the deployment series namespace,
// deployment): up (1 while the pod is scraped), vllm:request_success_total, vllm:num_requests_running,
// vllm:num_requests_waiting, vllm:prompt_tokens_total,
// vllm:generation_tokens_total, the histograms
// vllm:request_prompt_tokens, vllm:request_generation_tokens,
// vllm:time_to_first_token_seconds and vllm:inter_token_latency_seconds,
// and kube_deployment_spec_replicas. The latency histograms follow one
// replica model (WeekReplica): a request's first token takes its request
// overhead plus its prompt's prefill, and each decode step of a pod's
// running batch takes the model's step time, so `backtest --calibrate`
// can fit the model back from the week.
// Each pod is scraped at its own offset within the interval (7 s × its
// sequence number, modulo the interval), as Prometheus spreads targets.
// Timestamps are in seconds; the text ends with "# EOF".
package synthweek

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/infscale/infscale/pkg/replica"
)

// Config shapes the week. Zero fields take the defaults in brackets.
type Config struct {
	// Start is the first scrape [2026-01-05T00:00:00Z, a Monday].
	Start time.Time
	// Days is the span in days [7].
	Days int
	// Scrape is the scrape interval [60s].
	Scrape time.Duration
	// PeakRate is the weekday arrival rate at PeakHour, requests/s [20].
	PeakRate float64
	// PeakHour is the hour of day (UTC) of the daily peak [15].
	PeakHour int
	// WeekendFactor multiplies Saturday's and Sunday's traffic [0.4].
	WeekendFactor float64
	// PerPod is the arrival rate one pod is sized for, requests/s [4].
	PerPod float64
	// Latency is the mean time a request spends in flight, seconds [5].
	Latency float64
	// Seed fixes the Poisson draws [1].
	Seed uint64
	// Namespace and Deployment label the series ["llm", "chat"].
	Namespace, Deployment string
}

func (c Config) withDefaults() Config {
	if c.Start.IsZero() {
		c.Start = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	}
	if c.Days == 0 {
		c.Days = 7
	}
	if c.Scrape == 0 {
		c.Scrape = time.Minute
	}
	if c.PeakRate == 0 {
		c.PeakRate = 20
	}
	if c.PeakHour == 0 {
		c.PeakHour = 15
	}
	if c.WeekendFactor == 0 {
		c.WeekendFactor = 0.4
	}
	if c.PerPod == 0 {
		c.PerPod = 4
	}
	if c.Latency == 0 {
		c.Latency = 5
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Namespace == "" {
		c.Namespace = "llm"
	}
	if c.Deployment == "" {
		c.Deployment = "chat"
	}
	return c
}

// Truth is what generated the week, for tests to compare against.
type Truth struct {
	// Start and End bound the week: scrapes at Start, Start+Scrape, ...,
	// End (End included).
	Start, End time.Time
	// Scrape is the scrape interval.
	Scrape time.Duration
	// Requests are the requests that arrived in (Start, End].
	Requests int64
	// ReplicaSeconds is the integral of kube_deployment_spec_replicas over
	// [Start, End), the spec value holding from one scrape to the next.
	ReplicaSeconds float64
	// PromptMean and OutputMean are the mean tokens per completed request.
	PromptMean, OutputMean float64
	// PeakHour is the hour of day of the daily peak; WeekendFactor the
	// weekend's traffic relative to weekdays.
	PeakHour      int
	WeekendFactor float64
	// Spike, Gap: [from, to) of the spike and of the scrape gap.
	Spike, Gap [2]time.Time
	// Restart is the scrape at which RestartPod's counters read reset;
	// Rollout the scrape at which every pod was replaced.
	Restart    time.Time
	RestartPod string
	Rollout    time.Time
	// Aborted are the requests in flight on RestartPod when it restarted:
	// they never complete, so no reconstruction from counters sees them.
	Aborted int64
	// Pods is the number of distinct pod names; Samples the samples written.
	Pods    int
	Samples int64
}

// Bucket bounds (le) of the histograms; +Inf is implicit.
var (
	PromptBounds = []float64{128, 512, 1024, 2048}
	OutputBounds = []float64{64, 256, 512, 1024}
	TTFTBounds   = []float64{0.1, 0.25, 0.5, 1, 2.5}
)

// Per-bucket shares (including +Inf) and the token count a request in each
// bucket has (so that _sum and the token counters are exact).
var (
	promptShare = []float64{0.15, 0.35, 0.25, 0.2, 0.05}
	promptRep   = []float64{100, 400, 800, 1500, 3000}
	outputShare = []float64{0.25, 0.45, 0.2, 0.08, 0.02}
	outputRep   = []float64{50, 180, 400, 800, 1500}
)

// ITLBounds are the bucket bounds (le, seconds) of the week's ITL
// histogram, a subset of vLLM's.
var ITLBounds = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.25}

// WeekReplica is the replica model the week's latency histograms follow:
// pkg/replica's base (Llama-3-8B FP16 on one H100 SXM, bandwidth
// efficiency 0.7, MFU 0.4) with a 2 ms step overhead, 150 us per running
// sequence per step and 50 ms of request overhead.
func WeekReplica() replica.Config {
	c := replica.DefaultConfig()
	c.StepOverhead = 2 * time.Millisecond
	c.SequenceStepCost = 150 * time.Microsecond
	c.RequestOverhead = 50 * time.Millisecond
	return c
}

// weekModel is WeekReplica built, with the per-request TTFT of each prompt
// bucket (promptRep) and the KV tokens a running sequence holds on average
// (the mean prompt plus half the mean output).
type weekModel struct {
	r          *replica.Replica
	ttft       []float64
	seqContext float64
}

func newWeekModel() weekModel {
	r, err := replica.New(WeekReplica())
	if err != nil {
		panic(fmt.Sprintf("synthweek: the week's replica: %v", err)) // a constant configuration
	}
	m := weekModel{r: r}
	var prompt, output float64
	for i, p := range promptRep {
		m.ttft = append(m.ttft, r.RequestOverhead()+r.PrefillTime(int(p)))
		prompt += promptShare[i] * p
	}
	for i, o := range outputRep {
		output += outputShare[i] * o
	}
	m.seqContext = prompt + output/2
	return m
}

// step is the decode step in seconds at a mean running batch, between
// the whole batches' steps (the step is linear in the batch below the
// compute bound).
func (m weekModel) step(batch float64) float64 {
	lo := int(math.Floor(batch))
	at := func(b int) float64 { return m.r.StepTime(b, int64(math.Round(float64(b)*m.seqContext))) }
	if lo == 0 {
		return at(1)
	}
	return at(lo) + (batch-float64(lo))*(at(lo+1)-at(lo))
}

// pod is one pod's cumulative counters and current gauges.
type pod struct {
	name             string
	first, last      int // scrape indexes
	success          []float64
	inflight         []float64
	promptB, outputB []float64 // cumulative bucket counts, per bucket (not cumulative over le)
	ttftB            []float64
	promptSum        []float64
	outputSum        []float64
	ttftSum          []float64
	pc, oc, tc       []float64 // running totals per bucket
	ps, os, ts, succ float64
	cur              float64 // requests in flight now
	off              int64   // scrape offset within the interval, seconds
}

// Rate is the generated arrival rate in requests/s at t (before Poisson
// noise): the daily cycle between 25% and 100% of PeakRate, times
// WeekendFactor on Saturday and Sunday, times 3 during the spike.
func (c Config) Rate(t time.Time) float64 {
	c = c.withDefaults()
	h := float64(t.Hour()) + float64(t.Minute())/60 + float64(t.Second())/3600
	r := c.PeakRate * (0.25 + 0.75*(1+math.Cos(2*math.Pi*(h-float64(c.PeakHour))/24))/2)
	if wd := t.Weekday(); wd == time.Saturday || wd == time.Sunday {
		r *= c.WeekendFactor
	}
	if s := c.spike(); !t.Before(s[0]) && t.Before(s[1]) {
		r *= 3
	}
	return r
}

func (c Config) spike() [2]time.Time {
	s := c.Start.Add(2*24*time.Hour + 10*time.Hour)
	return [2]time.Time{s, s.Add(30 * time.Minute)}
}

func (c Config) gap() [2]time.Time {
	s := c.Start.Add(4*24*time.Hour + 16*time.Hour)
	return [2]time.Time{s, s.Add(20 * time.Minute)}
}

// Write generates the week and writes it to w as OpenMetrics.
func Write(w io.Writer, cfg Config) (Truth, error) {
	c := cfg.withDefaults()
	pods, spec, tr := run(c)
	tr.PromptMean, tr.OutputMean = tokenMeans(pods)
	err := emit(w, c, pods, spec, &tr)
	return tr, err
}

// run plays the week: the pods (every one that ever ran, with its
// samples), the deployment's spec replicas per scrape, and the truth
// (without the token means and the samples count).
func run(c Config) ([]*pod, []float64, Truth) {
	dt := c.Scrape.Seconds()
	n := int(time.Duration(c.Days)*24*time.Hour/c.Scrape) + 1 // scrapes 0..n-1
	rng := rand.New(rand.NewPCG(c.Seed, 0x68697374))
	tr := Truth{Start: c.Start, End: c.Start.Add(time.Duration(n-1) * c.Scrape), Scrape: c.Scrape,
		PeakHour: c.PeakHour, WeekendFactor: c.WeekendFactor, Spike: c.spike(), Gap: c.gap()}
	tr.Restart = c.Start.Add(24*time.Hour + 13*time.Hour)
	tr.Rollout = c.Start.Add(3*24*time.Hour + 9*time.Hour)
	at := func(k int) time.Time { return c.Start.Add(time.Duration(k) * c.Scrape) }
	kRestart := int(tr.Restart.Sub(c.Start) / c.Scrape)
	kRollout := int(tr.Rollout.Sub(c.Start) / c.Scrape)
	every := int(5 * time.Minute / c.Scrape)
	if every < 1 {
		every = 1
	}

	var pods []*pod
	var active []*pod
	hash, seq := "5f7d8c", 0
	newPod := func(k int) *pod {
		seq++
		p := &pod{name: fmt.Sprintf("%s-%s-%d", c.Deployment, hash, seq), first: k, last: k, off: int64(seq*7) % int64(dt),
			pc: make([]float64, len(promptShare)), oc: make([]float64, len(outputShare)), tc: make([]float64, len(TTFTBounds)+1)}
		pods = append(pods, p)
		return p
	}
	spec := make([]float64, n)
	want := func(k int) int {
		return max(1, int(math.Ceil(c.Rate(at(k))*1.1/c.PerPod)))
	}
	for range want(0) {
		p := newPod(0)
		p.succ = float64(1000 * seq) // counters from before the week
		active = append(active, p)
	}
	lat := min(c.Latency/dt, 1)
	model := newWeekModel()
	inflight := 0.0
	for k := 0; k < n; k++ {
		t := at(k)
		// Scale and roll out at boundaries. Pods that leave are scraped one
		// last time at k, having drained what they held at k-1.
		var leaving []*pod
		if k > 0 && k%every == 0 {
			r := want(k)
			for len(active) < r {
				active = append(active, newPod(k))
			}
			if len(active) > r {
				leaving = append(leaving, active[r:]...)
				active = active[:r:r]
			}
		}
		if k == kRollout {
			hash = "9b2e41"
			leaving = append(leaving, active...)
			fresh := make([]*pod, len(active))
			for i := range fresh {
				fresh[i] = newPod(k)
			}
			active = fresh
		}
		spec[k] = float64(len(active))
		if k == 0 {
			inflight = math.Round(c.Rate(t) * c.Latency)
			share(inflight, len(active), func(i int, v float64) { active[i].cur = v; active[i].record(k) })
			continue
		}
		arr := poisson(rng, c.Rate(t.Add(-c.Scrape/2))*dt)
		tr.Requests += int64(arr)
		next := math.Round(arr * lat)
		for _, p := range leaving {
			inflight -= p.cur
			p.complete(p.cur, model)
			p.cur = 0
			p.record(k)
		}
		if k == kRestart {
			// The restart aborts what the pod held: those requests arrived
			// (they are in Requests) but never complete.
			p := active[0]
			tr.Aborted += int64(p.cur)
			inflight -= p.cur
			p.cur = 0
		}
		done := inflight + arr - next
		inflight = next
		share(done, len(active), func(i int, d float64) {
			p := active[i]
			if k == kRestart && i == 0 {
				tr.RestartPod = p.name
				p.succ, p.ps, p.os, p.ts = 0, 0, 0, 0
				clear(p.pc)
				clear(p.oc)
				clear(p.tc)
			}
			p.complete(d, model)
		})
		share(inflight, len(active), func(i int, v float64) { active[i].cur = v; active[i].record(k) })
	}
	for k := 0; k < n-1; k++ {
		tr.ReplicaSeconds += spec[k] * dt
	}
	tr.Pods = len(pods)
	return pods, spec, tr
}

// tokenMeans are the prompt and output tokens per completed request over
// every pod's buckets.
func tokenMeans(pods []*pod) (prompt, output float64) {
	var cnt, ptok, otok float64
	for _, p := range pods {
		for i := range p.pc {
			cnt += p.pc[i]
			ptok += p.pc[i] * promptRep[i]
			otok += p.oc[i] * outputRep[i]
		}
	}
	return ptok / cnt, otok / cnt
}

// emit writes the pods' series (and the deployment's spec replicas) as
// OpenMetrics text, skipping the scrape gap; tr.Samples counts them.
func emit(w io.Writer, c Config, pods []*pod, spec []float64, tr *Truth) error {
	dt := c.Scrape.Seconds()
	at := func(k int) time.Time { return c.Start.Add(time.Duration(k) * c.Scrape) }
	bw := bufio.NewWriterSize(w, 1<<20)
	skip := func(k int) bool { t := at(k); return !t.Before(tr.Gap[0]) && t.Before(tr.Gap[1]) }
	e := &Emitter{W: bw, Start: c.Start.Unix(), Step: int64(dt), Skip: skip}
	podLabels := func(p *pod) string {
		return fmt.Sprintf(`namespace="%s",pod="%s"`, c.Namespace, p.name)
	}
	// up: 1 while the pod is scraped, as Prometheus records every target
	// (queries keep the live pods with `and on (pod) (up == 1)`).
	e.Family("up", "gauge")
	for _, p := range pods {
		e.SeriesAt("up", podLabels(p), p.first, p.off, mapv(p.inflight, func(float64) float64 { return 1 }))
	}
	e.Family("vllm:request_success", "counter")
	for _, p := range pods {
		e.SeriesAt("vllm:request_success_total", podLabels(p), p.first, p.off, p.success)
	}
	e.Family("vllm:num_requests_running", "gauge")
	for _, p := range pods {
		e.SeriesAt("vllm:num_requests_running", podLabels(p), p.first, p.off, mapv(p.inflight, func(v float64) float64 { return min(v, 64) }))
	}
	e.Family("vllm:num_requests_waiting", "gauge")
	for _, p := range pods {
		e.SeriesAt("vllm:num_requests_waiting", podLabels(p), p.first, p.off, mapv(p.inflight, func(v float64) float64 { return max(v-64, 0) }))
	}
	e.Family("vllm:prompt_tokens", "counter")
	for _, p := range pods {
		e.SeriesAt("vllm:prompt_tokens_total", podLabels(p), p.first, p.off, p.promptSum)
	}
	e.Family("vllm:generation_tokens", "counter")
	for _, p := range pods {
		e.SeriesAt("vllm:generation_tokens_total", podLabels(p), p.first, p.off, p.outputSum)
	}
	hist := func(name string, bounds []float64, buckets func(*pod) []float64, sum func(*pod) []float64) {
		e.Family(name, "histogram")
		nb := len(bounds) + 1
		for _, p := range pods {
			b := buckets(p)
			steps := len(b) / nb
			for j := 0; j < nb; j++ {
				le := "+Inf"
				if j < len(bounds) {
					le = strconv.FormatFloat(bounds[j], 'f', -1, 64)
				}
				cum := make([]float64, steps)
				for s := range steps {
					for i := 0; i <= j; i++ {
						cum[s] += b[s*nb+i]
					}
				}
				e.SeriesAt(name+"_bucket", podLabels(p)+`,le="`+le+`"`, p.first, p.off, cum)
			}
			cnt := make([]float64, steps)
			for s := range steps {
				for i := 0; i < nb; i++ {
					cnt[s] += b[s*nb+i]
				}
			}
			e.SeriesAt(name+"_count", podLabels(p), p.first, p.off, cnt)
			e.SeriesAt(name+"_sum", podLabels(p), p.first, p.off, sum(p))
		}
	}
	hist("vllm:request_prompt_tokens", PromptBounds, func(p *pod) []float64 { return p.promptB }, func(p *pod) []float64 { return p.promptSum })
	hist("vllm:request_generation_tokens", OutputBounds, func(p *pod) []float64 { return p.outputB }, func(p *pod) []float64 { return p.outputSum })
	hist("vllm:time_to_first_token_seconds", TTFTBounds, func(p *pod) []float64 { return p.ttftB }, func(p *pod) []float64 { return p.ttftSum })
	// ITL: over the interval ending at a scrape, the pod runs the mean b of
	// its running gauge at the interval's two ends (the batch moves between
	// scrapes), stepping b × interval / step(b) tokens, each after step(b);
	// the restarted pod's histogram starts again from 0.
	model := newWeekModel()
	kRestart := int(tr.Restart.Sub(c.Start) / c.Scrape)
	itl := func(p *pod) (buckets, sums []float64) {
		nb := len(ITLBounds) + 1
		cum := make([]float64, nb)
		var sum float64
		for i, v := range p.inflight {
			if p.name == tr.RestartPod && p.first+i == kRestart {
				clear(cum)
				sum = 0
			}
			if i == 0 {
				buckets = append(buckets, cum...)
				sums = append(sums, sum)
				continue
			}
			if b := (min(v, 64) + min(p.inflight[i-1], 64)) / 2; b > 0 {
				st := model.step(b)
				n := b * dt / st
				j := len(ITLBounds)
				for k, le := range ITLBounds {
					if st <= le {
						j = k
						break
					}
				}
				cum[j] += n
				sum += n * st
			}
			buckets = append(buckets, cum...)
			sums = append(sums, sum)
		}
		return buckets, sums
	}
	itlB, itlS := map[*pod][]float64{}, map[*pod][]float64{}
	for _, p := range pods {
		itlB[p], itlS[p] = itl(p)
	}
	hist("vllm:inter_token_latency_seconds", ITLBounds, func(p *pod) []float64 { return itlB[p] }, func(p *pod) []float64 { return itlS[p] })
	e.Family("kube_deployment_spec_replicas", "gauge")
	e.Series("kube_deployment_spec_replicas", fmt.Sprintf(`namespace="%s",deployment="%s"`, c.Namespace, c.Deployment), 0, spec)
	fmt.Fprintln(bw, "# EOF")
	tr.Samples = e.Samples
	if e.Err != nil {
		return e.Err
	}
	return bw.Flush()
}

// complete counts d finished requests: their prompt and output buckets by
// the shares, and each one's TTFT from its prompt (m).
func (p *pod) complete(d float64, m weekModel) {
	p.succ += d
	before := slices.Clone(p.pc)
	p.ps += spread(d, promptShare, promptRep, p.pc)
	p.os += spread(d, outputShare, outputRep, p.oc)
	for i := range p.pc {
		n := p.pc[i] - before[i]
		if n == 0 {
			continue
		}
		v := m.ttft[i]
		j := len(TTFTBounds)
		for b, le := range TTFTBounds {
			if v <= le {
				j = b
				break
			}
		}
		p.tc[j] += n
		p.ts += n * v
	}
}

// record appends the pod's state at scrape k (pods are recorded at every
// scrape from their first to their last, contiguously).
func (p *pod) record(k int) {
	p.last = k
	p.success = append(p.success, p.succ)
	p.inflight = append(p.inflight, p.cur)
	p.promptSum = append(p.promptSum, p.ps)
	p.outputSum = append(p.outputSum, p.os)
	p.ttftSum = append(p.ttftSum, p.ts)
	p.promptB = append(p.promptB, p.pc...)
	p.outputB = append(p.outputB, p.oc...)
	p.ttftB = append(p.ttftB, p.tc...)
}

// share splits total (a whole number) over n parts, the remainder to the first.
func share(total float64, n int, f func(i int, v float64)) {
	base := math.Floor(total / float64(n))
	rem := int(total - base*float64(n))
	for i := range n {
		v := base
		if i < rem {
			v++
		}
		f(i, v)
	}
}

// spread adds d requests to the per-bucket totals by the shares (largest
// remainder, so the buckets add up to d) and returns their summed value.
func spread(d float64, shares, rep, into []float64) float64 {
	var sum, prev float64
	cum := 0.0
	for i, s := range shares {
		cum += s
		c := math.Round(cum * d)
		if i == len(shares)-1 {
			c = d
		}
		into[i] += c - prev
		sum += (c - prev) * rep[i]
		prev = c
	}
	return sum
}

func mapv(xs []float64, f func(float64) float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// poisson draws a Poisson count with the given mean (normal approximation
// above 50).
func poisson(rng *rand.Rand, mean float64) float64 {
	if mean <= 0 {
		return 0
	}
	if mean > 50 {
		return max(0, math.Round(mean+math.Sqrt(mean)*rng.NormFloat64()))
	}
	l, k, p := math.Exp(-mean), 0.0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// Emitter writes OpenMetrics sample lines of series scraped every Step
// seconds from Start (unix seconds): value k of a series is at
// Start + k·Step. Skip (nil: none) leaves out the scrapes it reports (a
// scrape gap). Samples counts the lines written; Err is the first write
// error. The caller writes the closing "# EOF".
type Emitter struct {
	W           *bufio.Writer
	Start, Step int64
	Skip        func(k int) bool
	Samples     int64
	Err         error
}

// Family writes a family's TYPE line (typ: counter, gauge or histogram).
func (e *Emitter) Family(name, typ string) {
	fmt.Fprintf(e.W, "# TYPE %s %s\n", name, typ)
}

// Series writes vals[i] at scrape first+i (labels: the inside of {...}),
// except the skipped scrapes.
func (e *Emitter) Series(name, labels string, first int, vals []float64) {
	e.SeriesAt(name, labels, first, 0, vals)
}

// SeriesAt is Series with every timestamp shifted by off seconds (pods are
// scraped at their own offset within the interval, as Prometheus spreads
// targets).
func (e *Emitter) SeriesAt(name, labels string, first int, off int64, vals []float64) {
	var buf []byte
	for i, v := range vals {
		k := first + i
		if e.Skip != nil && e.Skip(k) {
			continue
		}
		buf = buf[:0]
		buf = append(buf, name...)
		buf = append(buf, '{')
		buf = append(buf, labels...)
		buf = append(buf, "} "...)
		buf = strconv.AppendFloat(buf, v, 'f', -1, 64)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, e.Start+int64(k)*e.Step+off, 10)
		buf = append(buf, '\n')
		if _, err := e.W.Write(buf); err != nil && e.Err == nil {
			e.Err = err
		}
		e.Samples++
	}
}
