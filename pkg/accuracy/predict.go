package accuracy

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/trace"
)

// DefaultMaxNumBatchedTokens is vLLM's max_num_batched_tokens when a row
// leaves it empty (vLLM V1's default for the OpenAI server on a GPU with
// more than 70 GiB).
const DefaultMaxNumBatchedTokens = 8192

// MaxRequests bounds the requests one experiment's stages may draw (rate
// × duration summed): a week at 30 req/s is 18 million.
const MaxRequests = 20_000_000

// Options configures Predict.
type Options struct {
	// Base is the replica configuration every experiment starts from; the
	// row's GPU, model, TP, precision, max_num_seqs and gpu_mem_util
	// replace its fields. Zero: replica.Fitted().
	Base *replica.Config
	// Models resolves a row's model name; nil: replica.LookupModel (the
	// catalog). `--model-config` adds the configs a user gives.
	Models func(name string) (replica.Model, error)
	// Seed draws the Poisson arrivals (one stream per experiment).
	Seed uint64
	// Adjust, when set, changes each experiment's replica configuration
	// once its row has set it (a calibration file for that GPU, model and
	// TP); an error names the row.
	Adjust func(replica.Config) (replica.Config, error)
}

// Prediction of one stage: every metric in milliseconds.
type predicted map[Metric]float64

// Predict replays every experiment of stages through the replica model and
// the replay (one replica, Poisson arrivals at each stage's rate for its
// duration, the stages back to back as the run had them) and returns each
// row's predicted metrics in milliseconds. Errors name the row
// (file:line) whose model, GPU or settings cannot be replayed.
func Predict(ctx context.Context, stages []Stage, opt Options) (map[Key]map[Metric]float64, error) {
	out := map[Key]map[Metric]float64{}
	for _, exp := range experiments(stages) {
		res, err := predictExperiment(ctx, exp, opt)
		if err != nil {
			return nil, err
		}
		for k, v := range res {
			out[k] = v
		}
	}
	return out, nil
}

// experiments groups rows by experiment, in first-appearance order.
func experiments(stages []Stage) [][]Stage {
	idx := map[string]int{}
	var out [][]Stage
	for _, s := range stages {
		i, ok := idx[s.Experiment]
		if !ok {
			i = len(out)
			idx[s.Experiment] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], s)
	}
	return out
}

// ReplicaConfig is the replica an experiment's row describes: base with
// the row's GPU, model, TP, weight precision, max_num_seqs and
// gpu_mem_util.
func ReplicaConfig(s Stage, base replica.Config, models func(string) (replica.Model, error)) (replica.Config, error) {
	c := base
	g, err := replica.LookupGPU(s.Hardware)
	if err != nil {
		return c, fmt.Errorf("%s:%d: hardware: %w", s.File, s.Line, err)
	}
	c.GPU = g
	if models == nil {
		models = replica.LookupModel
	}
	m, err := models(s.Model)
	if err != nil {
		return c, fmt.Errorf("%s:%d: model: %w (give its config.json with --model-config)", s.File, s.Line, err)
	}
	c.Model = m
	c.TP = s.TP
	switch p := strings.ToLower(s.Precision); p {
	case "", "fp16", "bf16", "auto":
		c.WeightDType = replica.DTypeAuto
		if m.DType == replica.DTypeFP8 || m.DType == replica.DTypeINT8 || m.DType == replica.DTypeINT4 {
			c.WeightDType = replica.DTypeBF16 // a quantised checkpoint run at 16 bits is not what the row says
		}
	default:
		d, err := replica.ParseDType(p)
		if err != nil {
			return c, fmt.Errorf("%s:%d: precision: %w", s.File, s.Line, err)
		}
		c.WeightDType = d
	}
	if s.MaxNumSeqs > 0 {
		c.MaxNumSeqs = s.MaxNumSeqs
	}
	if s.GPUMemoryUtilization > 0 {
		c.MemoryUtilization = s.GPUMemoryUtilization
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("%s:%d: %w", s.File, s.Line, err)
	}
	return c, nil
}

func predictExperiment(ctx context.Context, rows []Stage, opt Options) (map[Key]map[Metric]float64, error) {
	var run []Stage
	for _, s := range rows {
		if s.StageIndex >= 0 && !slices.ContainsFunc(run, func(x Stage) bool { return x.StageIndex == s.StageIndex }) {
			run = append(run, s)
		}
	}
	slices.SortFunc(run, func(a, b Stage) int { return a.StageIndex - b.StageIndex })
	if len(run) == 0 {
		// Only whole-run rows: each is one stage at its own rate.
		for _, s := range rows {
			if s.Rate <= 0 {
				return nil, fmt.Errorf("%s:%d: column stage_rate_rps: a whole-run row without stage rows needs its arrival rate", s.File, s.Line)
			}
		}
		run = rows[:1]
	}
	first := run[0]
	base := replica.Fitted()
	if opt.Base != nil {
		base = *opt.Base
	}
	cfg, err := ReplicaConfig(first, base, opt.Models)
	if err != nil {
		return nil, err
	}
	if opt.Adjust != nil {
		if cfg, err = opt.Adjust(cfg); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", first.File, first.Line, err)
		}
	}
	rep, err := replica.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", first.File, first.Line, err)
	}

	expected := 0.0
	for _, s := range run {
		expected += s.Rate / float64(max(s.DP, 1)) * s.Duration
	}
	if expected > MaxRequests {
		return nil, fmt.Errorf("%s:%d: the stages of %s draw about %.3g requests: at most %d are replayed (lower the rate or the duration)", first.File, first.Line, first.Experiment, expected, MaxRequests)
	}
	// Arrivals: Poisson at each stage's rate (per data-parallel replica:
	// the router spreads them), stages back to back.
	h := fnv.New64a()
	h.Write([]byte(first.Experiment))
	rng := rand.New(rand.NewPCG(opt.Seed, h.Sum64()))
	var reqs []trace.Request
	var bounds []float64 // stage i covers [bounds[i], bounds[i+1])
	t0 := 0.0
	misses := first.UniqueSystemPrompts // the first request of each prefix prefills it
	for _, s := range run {
		bounds = append(bounds, t0)
		rate := s.Rate / float64(max(s.DP, 1))
		for t := t0 + rng.ExpFloat64()/rate; t < t0+s.Duration; t += rng.ExpFloat64() / rate {
			p := s.QuestionLen
			if misses > 0 {
				p += s.SystemPromptLen
				misses--
			}
			reqs = append(reqs, trace.Request{Arrival: t, Prompt: int32(max(p, 1)), Output: int32(s.OutputLen)})
		}
		t0 += s.Duration
	}
	bounds = append(bounds, t0)
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%s:%d: the stages draw no request (rate x duration too small)", first.File, first.Line)
	}
	var model replay.Model = rep
	if first.SystemPromptLen > 0 && first.UniqueSystemPrompts > 0 {
		model = prefixed{rep, int64(first.SystemPromptLen)}
	}
	mnbt := first.MaxNumBatchedTokens
	if mnbt == 0 {
		mnbt = DefaultMaxNumBatchedTokens
	}
	src := trace.FromSlice(first.Experiment, t0, reqs)
	lat, err := replay.Latencies(ctx, src, 1, replay.Config{Model: model, MaxBatchedTokens: mnbt, Prefill: replay.PrefillChunked})
	if err != nil {
		return nil, fmt.Errorf("%s:%d: replay: %w", first.File, first.Line, err)
	}
	out := map[Key]map[Metric]float64{}
	for _, s := range rows {
		lo, hi := 0.0, math.Inf(1)
		if i := slices.IndexFunc(run, func(x Stage) bool { return x.StageIndex == s.StageIndex }); i >= 0 && s.StageIndex >= 0 {
			lo, hi = bounds[i], bounds[i+1]
		}
		out[s.Key()] = summarize(lat, lo, hi)
	}
	return out, nil
}

// prefixed is a replica serving requests whose first prefix tokens hit
// vLLM's prefix cache: the trace carries only the tokens to prefill, and
// every running sequence's context holds prefix more tokens of KV, which
// each decode step reads (the attention reads a shared block once per
// sequence).
type prefixed struct {
	*replica.Replica
	prefix int64
}

func (p prefixed) StepTime(batch int, contextTokens int64) float64 {
	return p.Replica.StepTime(batch, contextTokens+int64(batch)*p.prefix)
}

// summarize is the metrics of the requests that arrived in [lo, hi), in
// milliseconds; empty when none completed.
func summarize(lat []replay.Latency, lo, hi float64) map[Metric]float64 {
	var ttft, e2e []float64
	var out float64
	for _, l := range lat {
		if l.Arrival >= lo && l.Arrival < hi {
			ttft = append(ttft, l.TTFT*1000)
			e2e = append(e2e, l.E2E*1000)
			out += float64(l.Output)
		}
	}
	if len(ttft) == 0 {
		return map[Metric]float64{}
	}
	n := float64(len(ttft))
	m := map[Metric]float64{
		TTFTMean: mean(ttft), TTFTP90: quantile(ttft, 0.9),
		E2EMean: mean(e2e), E2EP90: quantile(e2e, 0.9),
	}
	if o := out / n; o > 1 {
		m[ITLMean] = (m[E2EMean] - m[TTFTMean]) / (o - 1)
	}
	return m
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// quantile is the q-quantile with linear interpolation between order
// statistics (numpy's default, as inference-perf reports).
func quantile(v []float64, q float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	f := pos - float64(i)
	return s[i]*(1-f) + s[i+1]*f
}
