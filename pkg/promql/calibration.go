package promql

import (
	"fmt"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
)

// Calibration is the PromQL that fits the replica model to a target's
// history (docs/backtest.md, Calibration), printed canonically: one series
// per pod, each value a mean over the window ending at the evaluation time,
// HA duplicates collapsed and alternative family names joined with or, as
// History's. An empty string is a query the profile has no family for.
type Calibration struct {
	// Running is the pod's mean running gauge over the window
	// (avg_over_time), its decode batch; Waiting the most requests that
	// waited in it (max_over_time).
	Running, Waiting string
	// ITL is the pod's mean inter-token latency in seconds: the ITL
	// histogram's rate of _sum over its rate of _count.
	ITL string
	// TTFT is the pod's mean time to first token in seconds (the TTFT
	// histogram's _sum over _count); Prompt the prompt tokens per first
	// token (the prompt token counter's rate over the TTFT _count's), both
	// counted when a request's prefill ends.
	TTFT, Prompt string
}

// CalibrationQueries builds t's Calibration over windows of w. Errors: an
// unknown server or empty selector (Build's), a profile without a running
// gauge.
func CalibrationQueries(t Target, opts Options, w time.Duration) (Calibration, error) {
	if err := CheckHistory(t.Server); err != nil {
		return Calibration{}, err
	}
	if len(t.Selector) == 0 {
		return Calibration{}, fmt.Errorf("target %s: empty selector: want label matchers, e.g. {namespace=\"llm\"}", t.Name)
	}
	f := t.Server.Families()
	b := newShapes(Target{Server: t.Server, Selector: t.Selector}, opts)
	over := func(fn string) func(string) parser.Expr {
		return func(fam string) parser.Expr {
			return b.perPod(call(fn, rangeOf(selector(fam, b.sel), w)))
		}
	}
	var c Calibration
	c.Running = alternatives(f.Running, over("avg_over_time")).String()
	if len(f.Waiting) > 0 {
		c.Waiting = alternatives(f.Waiting, over("max_over_time")).String()
	}
	mean := func(families []string) string {
		if len(families) == 0 {
			return ""
		}
		return alternatives(families, func(fam string) parser.Expr {
			return binary(parser.DIV, b.perPodRate(fam+"_sum", w), b.perPodRate(fam+"_count", w), nil)
		}).String()
	}
	c.ITL, c.TTFT = mean(f.ITL), mean(f.TTFT)
	if len(f.PromptTokens) > 0 && len(f.TTFT) > 0 {
		var es []parser.Expr
		for _, p := range f.PromptTokens {
			for _, q := range f.TTFT {
				es = append(es, binary(parser.DIV, b.perPodRate(p, w), b.perPodRate(q+"_count", w), nil))
			}
		}
		c.Prompt = orChain(es).String()
	}
	return c, nil
}

// perPod is `sum by (pod) (max by (<dedup key>) (e))`: a pod's engines add
// up, copies of one series count once.
func (b shapes) perPod(e parser.Expr) parser.Expr {
	return aggregate(parser.SUM, false, b.pod(), b.dedup(e))
}

// perPodRate is perPod of rate(F{sel}[w]).
func (b shapes) perPodRate(family string, w time.Duration) parser.Expr {
	return b.perPod(call("rate", rangeOf(selector(family, b.sel), w)))
}
