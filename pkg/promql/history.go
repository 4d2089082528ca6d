package promql

import (
	"fmt"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/infscale/infscale/pkg/modelserver"
)

// History is the PromQL a backtest runs over one target's history
// (docs/backtest.md), printed canonically. It is built with the shapes the
// live signals use (docs/promql.md): the in-flight totals and the replica
// count restricted to live pods with HA duplicates collapsed, every family
// read through its alternative names; an empty string is a query the
// profile has no family for.
type History struct {
	// Success is the success counter's raw series and SuccessTimestamps
	// their sample times (timestamp() of the same selector), for the
	// arrivals' reconstruction.
	Success, SuccessTimestamps string
	// SuccessBaseline is each success series' last value at or before the
	// range's start, within BaselineLookback (`last_over_time(F{sel}[1d])`,
	// evaluated at the start): the baseline of a series whose first sample
	// in the range comes after its start (failed scrapes across the start),
	// which is otherwise a new pod's, counted in full.
	SuccessBaseline string
	// Running and Waiting are the Running and Waiting signals' queries
	// without their guard against a series below 0 (shapes.guarded):
	// backtest refuses a history whose sum is below 0 at any step.
	Running, Waiting string
	// Replicas is Target.Replicas when set, else the Reporting signal's
	// query (live pods reporting the running gauge).
	Replicas string
	// PromptHist and OutputHist are the token-length histograms'
	// `sum by (le) (increase(F_bucket[span]))` at the range's end (empty
	// without the families given to HistoryQueries).
	PromptHist, OutputHist string
	// PromptMean and OutputMean are tokens per successful request over the
	// span: sum of the token counter's increase / sum of the success
	// counter's increase.
	PromptMean, OutputMean string
	// TTFTHist is the TTFT histogram's increase over the span; TTFTHourly
	// its p95 over each hour (histogram_quantile over a 1h increase).
	TTFTHist, TTFTHourly string
}

// BaselineLookback is how far before a history's start History's
// SuccessBaseline looks for a series' last value: a day.
const BaselineLookback = 24 * time.Hour

// HistoryQueries builds the History of t over a range of span.
// promptHist and outputHist name the per-request token-length histogram
// families (without _bucket; empty: none). Errors: those of Build's
// (unknown server, empty selector, a replicas query that does not
// validate), and a profile without a success counter or a running gauge.
func HistoryQueries(t Target, opts Options, span time.Duration, promptHist, outputHist string) (History, error) {
	if err := CheckHistory(t.Server); err != nil {
		return History{}, err
	}
	f := t.Server.Families()
	exprs, err := build(Target{Name: t.Name, Server: t.Server, Selector: t.Selector, Replicas: t.Replicas}, opts, false)
	if err != nil {
		return History{}, err
	}
	b := newShapes(Target{Server: t.Server, Selector: t.Selector}, opts)
	var h History
	h.Success = b.series(f.Requests).String()
	h.SuccessTimestamps = b.alternativesOn(f.Requests, func(fam string) parser.Expr {
		return call("timestamp", selector(fam, b.sel))
	}).String()
	h.SuccessBaseline = b.alternativesOn(f.Requests, func(fam string) parser.Expr {
		return call("last_over_time", rangeOf(selector(fam, b.sel), BaselineLookback))
	}).String()
	h.Running = exprs[Running].String()
	if e, ok := exprs[Waiting]; ok {
		h.Waiting = e.String()
	}
	if e, ok := exprs[Current]; ok {
		h.Replicas = e.String()
	} else {
		h.Replicas = exprs[Reporting].String()
	}
	if promptHist != "" {
		h.PromptHist = b.bucketIncrease([]string{promptHist}, span).String()
	}
	if outputHist != "" {
		h.OutputHist = b.bucketIncrease([]string{outputHist}, span).String()
	}
	done := b.counterIncrease(f.Requests, span)
	if len(f.PromptTokens) > 0 {
		h.PromptMean = binary(parser.DIV, b.counterIncrease(f.PromptTokens, span), done, nil).String()
	}
	if len(f.GenerationTokens) > 0 {
		h.OutputMean = binary(parser.DIV, b.counterIncrease(f.GenerationTokens, span), done, nil).String()
	}
	if len(f.TTFT) > 0 {
		h.TTFTHist = b.bucketIncrease(f.TTFT, span).String()
		h.TTFTHourly = call("histogram_quantile", number(0.95), b.bucketIncrease(f.TTFT, time.Hour)).String()
	}
	return h, nil
}

// CheckHistory reports whether server profile s exports what a backtest
// reads: a success counter and a running gauge.
func CheckHistory(s modelserver.Server) error {
	f := s.Families()
	if len(f.Requests) == 0 || len(f.Running) == 0 {
		return fmt.Errorf("server %s: backtest needs a success counter and a running gauge; the profile has none (allowed: servers with both, e.g. vllm, sglang, trtllm)", s)
	}
	return nil
}

// series is the raw series of the first family name that has any, per
// pod, engine and model (`F1{sel} or on (<dedup key>) F2{sel}`).
func (b shapes) series(families []string) parser.Expr {
	return b.alternativesOn(families, func(fam string) parser.Expr { return selector(fam, b.sel) })
}

// alternativesOn is alternatives joined with `or on (<dedup key>)`: a later
// family's series count only for a pod, engine and model that has none of
// an earlier one's, whatever other labels tell them apart (vLLM's success
// counter has one series per finished_reason; its second name, the e2e
// latency histogram's _count, one in all: a plain or kept both).
func (b shapes) alternativesOn(families []string, per func(string) parser.Expr) parser.Expr {
	var out parser.Expr
	for _, f := range families {
		if out == nil {
			out = per(f)
			continue
		}
		out = binary(parser.LOR, out, per(f), b.dedupKey())
	}
	return out
}

// counterIncrease is `sum(sum by (<dedup key>) (max by (<dedup key>,
// finished_reason) (increase(F{sel}[w]))))` over the alternatives: the
// counter's increase over w summed over every series, copies of a pod's
// series (HA pairs, two scrape jobs) counted once and the series of one
// pod's finished reasons summed (max over them took the largest reason's
// count for the pod's).
func (b shapes) counterIncrease(families []string, w time.Duration) parser.Expr {
	return aggregate(parser.SUM, false, nil, alternatives(families, func(fam string) parser.Expr {
		return aggregate(parser.SUM, false, b.dedupKey(), b.dedup(call("increase", rangeOf(selector(fam, b.sel), w)), "finished_reason"))
	}))
}

// bucketIncrease is `sum by (le) (max by (<dedup key>, le)
// (increase(F_bucket{sel}[w])))` over the alternatives: a histogram's
// increase over w, copies of a pod's series counted once; le stays in the
// key, each bucket is its own series.
func (b shapes) bucketIncrease(families []string, w time.Duration) parser.Expr {
	return aggregate(parser.SUM, false, []string{"le"}, alternatives(families, func(fam string) parser.Expr {
		return b.dedup(call("increase", rangeOf(selector(fam+"_bucket", b.sel), w)), "le")
	}))
}
