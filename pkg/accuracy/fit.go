package accuracy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/infscale/infscale/pkg/replica"
)

// Bounds are the MAPE goals per metric, in percent (issue 21): the fit
// minimizes the sum of each metric's MAPE over its bound.
var Bounds = map[Metric]float64{TTFTMean: 15, ITLMean: 8, E2EMean: 8}

// FitResult is a fitted replica configuration and its error on the rows
// it was fitted on.
type FitResult struct {
	Config replica.Config
	// MAPE is per metric over the fit rows; Evaluations counts replays of
	// the fit set.
	MAPE        map[Metric]float64
	Evaluations int
}

// Terms prints the fitted terms, one per line, as Go constants would name
// them.
func (f FitResult) Terms() string {
	c := f.Config
	var b strings.Builder
	fmt.Fprintf(&b, "bandwidth_efficiency %.6f\nkv_bandwidth_efficiency %.6f\nmfu %.6f\nexpert_mfu %.6f\n", c.BandwidthEfficiency, c.KVBandwidthEfficiency, c.MFU, c.ExpertMFU)
	fmt.Fprintf(&b, "output_lag_steps %.6f\n", c.OutputLagSteps)
	fmt.Fprintf(&b, "step_overhead %v\nlayer_step_cost %v\nsequence_step_cost %v\nsequence_layer_cost %v\nkv_head_cost %v\nallreduce_latency %v\nrequest_overhead %v\n", c.StepOverhead, c.LayerStepCost, c.SequenceStepCost, c.SequenceLayerCost, c.KVHeadCost, c.AllReduceLatency, c.RequestOverhead)
	ms := make([]string, 0, len(f.MAPE))
	for _, m := range Metrics {
		if v, ok := f.MAPE[m]; ok {
			ms = append(ms, fmt.Sprintf("%s %.1f%%", m, v))
		}
	}
	fmt.Fprintf(&b, "fit MAPE: %s (%d evaluations)", strings.Join(ms, ", "), f.Evaluations)
	return b.String()
}

// param is one fitted term: how a free variable x maps to the config.
type param struct {
	name string
	set  func(c *replica.Config, x float64)
	x0   func(c replica.Config) float64
}

func logistic(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
func logit(p float64) float64 {
	p = min(max(p, 1e-3), 1-1e-3)
	return math.Log(p / (1 - p))
}

// durParam maps x to a duration exp(x) µs (> 0, scale-free); a start
// below typical (a term the base leaves at 0) starts at typical, so that
// the search begins at the term's order of magnitude.
func durParam(name string, typical time.Duration, get func(*replica.Config) *time.Duration) param {
	return param{name: name,
		set: func(c *replica.Config, x float64) { *get(c) = time.Duration(math.Exp(x) * float64(time.Microsecond)) },
		x0: func(c replica.Config) float64 {
			return math.Log(float64(max(*get(&c), typical)) / float64(time.Microsecond))
		}}
}

func fracParam(name string, get func(*replica.Config) *float64) param {
	return param{name: name,
		set: func(c *replica.Config, x float64) { *get(c) = logistic(x) },
		x0:  func(c replica.Config) float64 { return logit(*get(&c)) }}
}

// fitRestarts bounds Fit's Nelder-Mead restarts.
const fitRestarts = 3

// allParams are the terms a fit can free, by name.
var allParams = []param{
	fracParam("bandwidth_efficiency", func(c *replica.Config) *float64 { return &c.BandwidthEfficiency }),
	fracParam("kv_bandwidth_efficiency", func(c *replica.Config) *float64 { return &c.KVBandwidthEfficiency }),
	fracParam("mfu", func(c *replica.Config) *float64 { return &c.MFU }),
	fracParam("expert_mfu", func(c *replica.Config) *float64 { return &c.ExpertMFU }),
	{name: "output_lag_steps",
		set: func(c *replica.Config, x float64) { c.OutputLagSteps = 2 * logistic(x) },
		x0:  func(c replica.Config) float64 { return logit(max(c.OutputLagSteps, 0.5) / 2) }},
	durParam("step_overhead", time.Millisecond, func(c *replica.Config) *time.Duration { return &c.StepOverhead }),
	durParam("layer_step_cost", 20*time.Microsecond, func(c *replica.Config) *time.Duration { return &c.LayerStepCost }),
	durParam("sequence_step_cost", 10*time.Microsecond, func(c *replica.Config) *time.Duration { return &c.SequenceStepCost }),
	durParam("sequence_layer_cost", 200*time.Nanosecond, func(c *replica.Config) *time.Duration { return &c.SequenceLayerCost }),
	durParam("kv_head_cost", 50*time.Nanosecond, func(c *replica.Config) *time.Duration { return &c.KVHeadCost }),
	durParam("allreduce_latency", 10*time.Microsecond, func(c *replica.Config) *time.Duration { return &c.AllReduceLatency }),
	durParam("request_overhead", 10*time.Millisecond, func(c *replica.Config) *time.Duration { return &c.RequestOverhead }),
}

// FitParams names the terms Fit frees: the physical step model's five.
// Of the others, the KV read efficiency, the attention blocks' cost and
// the all-reduce latency are published measurements
// (replica.PagedDecodeKVEfficiencyH100, replica.DecodeBlockCostH100,
// replica.AllReduceLatencyH100), the experts' MFU is MFU and the rest are
// 0: among them the free per-sequence step cost, since what a decode
// step costs per running sequence is priced by the KV it reads, its
// attention blocks and its all-reduce bytes (fitted on top of them it
// traded with the per-layer cost and did not carry out of sample). Each
// is a property of the GPU and the engine, not of a model; the model's
// config gives what they multiply (bytes of weights and of KV, layers,
// all-reduces, FLOPs). docs/evaluation/ACCURACY.md compares this set
// with the per-sequence cost, the KV efficiency or the all-reduce
// latency fitted too, and with other sets.
var FitParams = []string{"bandwidth_efficiency", "mfu", "output_lag_steps",
	"layer_step_cost", "request_overhead"}

func fitParams(names []string) ([]param, error) {
	var out []param
	for _, n := range names {
		i := slices.IndexFunc(allParams, func(p param) bool { return p.name == n })
		if i < 0 {
			return nil, fmt.Errorf("fit: unknown term %q", n)
		}
		out = append(out, allParams[i])
	}
	return out, nil
}

// Fit fits the step model's terms (FitParams: the weights' bandwidth
// efficiency, MFU, output lag, per-layer step cost, request overhead; no
// per-sequence step cost beside the KV read at
// replica.PagedDecodeKVEfficiencyH100, each attention block (sequence ×
// KV head × layer) at replica.DecodeBlockCostH100, each all-reduce at
// replica.AllReduceLatencyH100 plus its bytes; the prefill floor, the
// interconnect's bytes, the embedding lookup and the padded batch's
// experts on) on the
// rows of every model not in heldOut, by Nelder-Mead on the sum over TTFT, ITL and e2e means of
// MAPE / Bounds. One set of terms for all rows (the data set is one GPU);
// opt.Base gives the starting point and every other field. Deterministic.
func Fit(ctx context.Context, stages []Stage, opt Options, heldOut []string) (FitResult, error) {
	var fit []Stage
	for _, s := range stages {
		if !slices.ContainsFunc(heldOut, func(h string) bool { return strings.EqualFold(h, s.Model) }) {
			fit = append(fit, s)
		}
	}
	if len(fit) == 0 {
		return FitResult{}, errors.New("fit: every row's model is held out")
	}
	base := replica.Fitted()
	if opt.Base != nil {
		base = *opt.Base
	}
	base.PrefillFloor, base.Interconnect, base.EmbeddingLookup, base.GraphPadding = true, true, true, true
	params, err := fitParams(FitParams)
	if err != nil {
		return FitResult{}, err
	}
	// The terms not freed are off, the KV read, the attention blocks and
	// the all-reduce at their measured figures: the fit is of FitParams
	// alone.
	base.StepOverhead, base.SequenceStepCost, base.LayerStepCost, base.SequenceLayerCost = 0, 0, 0, 0
	base.ExpertMFU, base.KVBandwidthEfficiency, base.OutputLagSteps = 0, replica.PagedDecodeKVEfficiencyH100, 0
	base.AllReduceLatency, base.RequestOverhead = 0, 0
	base.KVHeadCost = replica.DecodeBlockCostH100
	if !slices.Contains(FitParams, "allreduce_latency") {
		base.AllReduceLatency = replica.AllReduceLatencyH100
	}
	config := func(x []float64) replica.Config {
		c := base
		for i, p := range params {
			p.set(&c, x[i])
		}
		return c
	}
	evals := 0
	var lastErr error
	score := func(x []float64) (float64, map[Metric]float64) {
		evals++
		c := config(x)
		o := opt
		o.Base = &c
		pred, err := Predict(ctx, fit, o)
		if err != nil {
			lastErr = err
			return math.Inf(1), nil
		}
		r := Compare(fit, pred, nil, nil)
		s := 0.0
		for m, b := range Bounds {
			v, ok := r.MAPE[m]
			if !ok {
				continue
			}
			s += v / b
		}
		return s, r.MAPE
	}
	// The search starts from the calibrated mode's terms (terms it has at
	// 0 start at their typical size), whatever the base: the same data
	// give the same fit.
	start := base
	cal := replica.Calibrated()
	start.BandwidthEfficiency = cal.BandwidthEfficiency
	if slices.Contains(FitParams, "kv_bandwidth_efficiency") {
		start.KVBandwidthEfficiency = cal.BandwidthEfficiency
	}
	start.MFU, start.ExpertMFU = cal.MFU, cal.MFU
	start.StepOverhead, start.AllReduceLatency = cal.StepOverhead, cal.AllReduceLatency
	start.SequenceStepCost, start.RequestOverhead, start.OutputLagSteps = 0, 0, 0
	start.LayerStepCost, start.SequenceLayerCost = 0, 0
	x0 := make([]float64, len(params))
	for i, p := range params {
		x0[i] = p.x0(start)
	}
	f := func(x []float64) float64 {
		if ctx.Err() != nil {
			return math.Inf(1)
		}
		s, _ := score(x)
		return s
	}
	// Nelder-Mead stalls in the valleys where two terms trade (the
	// per-layer cost against the all-reduce latency): restart it from
	// its best point with a fresh simplex until a restart gains less than
	// 0.1% (at most fitRestarts times).
	best := nelderMead(f, x0, 1, 500)
	for i, v := 0, f(best); i < fitRestarts && ctx.Err() == nil; i++ {
		next := nelderMead(f, best, 0.5, 500)
		w := f(next)
		if w >= v {
			break
		}
		gain := (v - w) / v
		best, v = next, w
		if gain < 1e-3 {
			break
		}
	}
	if err := ctx.Err(); err != nil {
		return FitResult{}, err
	}
	s, mape := score(best)
	if math.IsInf(s, 1) {
		return FitResult{}, fmt.Errorf("fit: %w", lastErr)
	}
	return FitResult{Config: config(best), MAPE: mape, Evaluations: evals}, nil
}

// nelderMead minimizes f from x0 with an initial simplex of step along
// each axis, for at most maxEval evaluations (the standard reflection,
// expansion, contraction and shrink coefficients 1, 2, 0.5, 0.5).
func nelderMead(f func([]float64) float64, x0 []float64, step float64, maxEval int) []float64 {
	n := len(x0)
	type vert struct {
		x []float64
		v float64
	}
	s := make([]vert, n+1)
	evals := 0
	eval := func(x []float64) vert { evals++; return vert{x, f(x)} }
	s[0] = eval(slices.Clone(x0))
	for i := 0; i < n; i++ {
		x := slices.Clone(x0)
		x[i] += step
		s[i+1] = eval(x)
	}
	comb := func(a []float64, ca float64, b []float64, cb float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = ca*a[i] + cb*b[i]
		}
		return out
	}
	for evals < maxEval {
		sort.SliceStable(s, func(i, j int) bool { return s[i].v < s[j].v })
		if s[n].v-s[0].v < 1e-4*max(math.Abs(s[0].v), 1e-9) {
			break
		}
		c := make([]float64, n)
		for _, v := range s[:n] {
			for i := range c {
				c[i] += v.x[i] / float64(n)
			}
		}
		r := eval(comb(c, 2, s[n].x, -1))
		switch {
		case r.v < s[0].v:
			if e := eval(comb(c, 3, s[n].x, -2)); e.v < r.v {
				s[n] = e
			} else {
				s[n] = r
			}
		case r.v < s[n-1].v:
			s[n] = r
		default:
			k := eval(comb(c, 0.5, s[n].x, 0.5))
			if k.v < s[n].v {
				s[n] = k
				continue
			}
			for i := 1; i <= n; i++ {
				s[i] = eval(comb(s[0].x, 0.5, s[i].x, 0.5))
			}
		}
	}
	sort.SliceStable(s, func(i, j int) bool { return s[i].v < s[j].v })
	return s[0].x
}
