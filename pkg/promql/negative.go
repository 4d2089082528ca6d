package promql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// guardedSignals are the signals whose built query is guarded against a
// live pod's value below 0 (shapes.guarded): a sum or an average hides one.
var guardedSignals = []Signal{Running, Waiting, KV}

// maxNamedSeries caps the series a negativeSeriesError lists.
const maxNamedSeries = 3

// seriesValue is one series (its labels, TargetLabel left out) and its value.
type seriesValue struct {
	series string
	value  float64
}

// negativeSeriesError is the cause of a guarded signal read below 0 with
// the live series below 0 named (their labels: pod, engine, ...): at most
// maxNamedSeries of them, lowest first, out of n. It unwraps to the
// negativeValue read.
type negativeSeriesError struct {
	signal Signal
	value  negativeValue
	series []seriesValue
	n      int
	err    error // the query naming the series failed (series empty)
}

func (e *negativeSeriesError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: ", e.value)
	switch {
	case len(e.series) > 0:
		for i, p := range e.series {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %v", p.series, p.value)
		}
		if e.n > len(e.series) {
			fmt.Fprintf(&b, " and %d more series", e.n-len(e.series))
		}
		fmt.Fprintf(&b, " (a live pod's series of %s below 0", e.signal)
	case e.err != nil:
		fmt.Fprintf(&b, "a live pod's series of %s below 0 (the query naming it failed: %v", e.signal, e.err)
	default:
		fmt.Fprintf(&b, "a live pod's series of %s below 0 (none was below 0 when asked again to name it", e.signal)
	}
	fmt.Fprintf(&b, ", which the %s over pods would hide: no %s is below 0, so its exporter, or a proxy that rewrote its page, is broken; %s is unknown until no series reads below 0)",
		aggregateOf(e.signal), what(e.signal), e.signal)
	return b.String()
}

func (e *negativeSeriesError) Unwrap() error { return e.value }

// aggregateOf names what the guarded query of s does over pods.
func aggregateOf(s Signal) string {
	if s == KV {
		return "average"
	}
	return "sum"
}

// what names what s counts.
func what(s Signal) string {
	if s == KV {
		return "KV cache usage"
	}
	return "count of requests"
}

// negativeRound names the series behind each guarded signal
// (guardedSignals) that read below 0 this cycle (a *QueryError, ReasonNaN,
// wrapping a negativeValue), asking `<live series> < 0` (belowZero) of
// those targets, one query per signal for up to the plan's batch size of
// them (none in a cycle without such a read), and rewrites the errors in
// results to name them (negativeSeriesError; the reason stays nan, the
// signal unknown). It returns the queries sent.
func (e *Evaluator) negativeRound(ctx context.Context, p *Plan, t time.Time, results []Result) int {
	sent := 0
	for _, s := range guardedSignals {
		var jobs []job
		for i, tg := range p.targets {
			if p.buildErrs[i] != nil || !p.signals[i].has(s) || negativeRead(results[i].Errors[s]) == nil {
				continue
			}
			if ex := belowZero(tg, p.opts, s); ex != nil {
				jobs = append(jobs, job{target: i, text: verbatim(ex.String())})
			}
		}
		for len(jobs) > 0 {
			n := batchCut(jobs, p.batchSize)
			b := jobs[:n:n]
			jobs = jobs[n:]
			vec, _, err := e.API.Instant(ctx, textString(textOf(b)), t)
			sent++
			pods := make([][]seriesValue, len(b))
			for _, smp := range vec {
				k := 0
				if len(b) > 1 {
					if k = tagIndex(string(smp.Metric[TargetLabel])); k < 0 || k >= len(b) {
						continue
					}
				}
				m := smp.Metric.Clone()
				delete(m, TargetLabel)
				pods[k] = append(pods[k], seriesValue{series: m.String(), value: float64(smp.Value)})
			}
			for k, j := range b {
				qe := results[j.target].Errors[s].(*QueryError)
				ne := &negativeSeriesError{signal: s, value: *negativeRead(qe), err: err}
				if err == nil {
					ps := pods[k]
					slices.SortFunc(ps, func(a, b seriesValue) int {
						if a.value != b.value {
							if a.value < b.value {
								return -1
							}
							return 1
						}
						return strings.Compare(a.series, b.series)
					})
					ne.n, ne.series = len(ps), ps[:min(len(ps), maxNamedSeries)]
				}
				results[j.target].Errors[s] = &QueryError{Reason: qe.Reason, Query: qe.Query, Err: ne}
			}
		}
	}
	return sent
}

// negativeRead is the value of err when it is a read below 0 (a
// *QueryError of ReasonNaN whose cause is a negativeValue), else nil.
func negativeRead(err error) *negativeValue {
	qe, ok := err.(*QueryError)
	if !ok || qe.Reason != ReasonNaN {
		return nil
	}
	var nv negativeValue
	if !errors.As(qe.Err, &nv) {
		return nil
	}
	return &nv
}
