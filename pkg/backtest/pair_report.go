package backtest

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/infscale/infscale/pkg/replay"
)

// jsonPairRow is one row of a pair's JSON output: simulate --pd's row
// (replay.PDRow) plus savings_pct.
type jsonPairRow struct {
	replay.PDRow
	SavingsPct num `json:"savings_pct"`
}

type jsonPairActual struct {
	PrefillMinutes num          `json:"prefill_replica_minutes"`
	DecodeMinutes  num          `json:"decode_replica_minutes"`
	ReplicaMinutes num          `json:"replica_minutes"`
	PrefillPeak    num          `json:"prefill_peak"`
	DecodePeak     num          `json:"decode_peak"`
	Simulated      *jsonPairRow `json:"simulated,omitempty"`
}

type jsonPairReport struct {
	Start          time.Time      `json:"start"`
	End            time.Time      `json:"end"`
	Step           string         `json:"step"`
	Requests       num            `json:"requests"`
	DecodeRequests num            `json:"decode_requests"`
	PromptMean     num            `json:"prompt_tokens_mean"`
	OutputMean     num            `json:"output_tokens_mean"`
	KVLink         num            `json:"kv_link_bytes_per_second"`
	Coverage       jsonCoverage   `json:"coverage"`
	DecodeCoverage jsonCoverage   `json:"decode_coverage"`
	Actual         jsonPairActual `json:"actual"`
	Policies       []jsonPairRow  `json:"policies"`
	QueryTime      num            `json:"query_s"`
	ReplayTime     num            `json:"replay_s"`
	Queries        int            `json:"queries"`
	Warnings       []string       `json:"warnings,omitempty"`
}

func coverageJSON(c Coverage) jsonCoverage {
	out := jsonCoverage{Fraction: num(c.Fraction), Threshold: c.Threshold.String(), Gaps: []jsonGap{}, GaugeGaps: []jsonGap{}, Interpolated: c.Interpolated}
	for _, g := range c.Gaps {
		out.Gaps = append(out.Gaps, jsonGap{g.From, g.To, g.Duration().String()})
	}
	for _, g := range c.GaugeGaps {
		out.GaugeGaps = append(out.GaugeGaps, jsonGap{g.From, g.To, g.Duration().String()})
	}
	if r := c.Requested; r != nil {
		out.Requested = &jsonGap{r.From, r.To, r.Duration().String()}
	}
	return out
}

func pairRowJSON(r PairRow) jsonPairRow {
	return jsonPairRow{PDRow: replay.NewPDRow(r.PDResult, false), SavingsPct: num(r.SavingsPct)}
}

// WriteJSON writes the pair's report as one JSON object: requests (the
// pair's, from the prefill pool) and decode_requests, each pool's
// coverage, actual (each pool's replica-minutes and peak, and the
// simulated row), policies (simulate --pd's rows with savings_pct), and
// query/replay times. Unknown numbers are null.
func (rep PairReport) WriteJSON(w io.Writer) error {
	a := rep.Actual
	out := jsonPairReport{Start: rep.Start, End: rep.End, Step: rep.Step.String(), Requests: num(rep.Requests), DecodeRequests: num(rep.DecodeRequests),
		PromptMean: num(rep.PromptMean), OutputMean: num(rep.OutputMean), KVLink: num(rep.KVLink),
		Coverage: coverageJSON(rep.Coverage), DecodeCoverage: coverageJSON(rep.DecodeCoverage),
		Actual: jsonPairActual{PrefillMinutes: num(a.PrefillMinutes), DecodeMinutes: num(a.DecodeMinutes), ReplicaMinutes: num(a.Minutes()),
			PrefillPeak: num(a.PrefillPeak), DecodePeak: num(a.DecodePeak)},
		Policies:   []jsonPairRow{},
		QueryTime:  num(rep.Fetch.Duration.Seconds()),
		ReplayTime: num(rep.ReplayTime.Seconds()),
		Queries:    rep.Fetch.Queries,
		Warnings:   slices.Concat(rep.Fetch.Warnings, rep.Mismatch(), nonEmpty(rep.SLOWarning())),
	}
	if s := a.Simulated; s != nil {
		r := pairRowJSON(PairRow{PDResult: *s, SavingsPct: math.NaN()})
		out.Actual.Simulated = &r
	}
	for _, r := range rep.Policies {
		out.Policies = append(out.Policies, pairRowJSON(r))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteText writes the summary (range, requests of each pool, coverage
// and gaps of each), the table (the actual rows, then one row per policy
// with each pool's replica-minutes and the savings versus actual) and the
// legend.
func (rep PairReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "history   %s .. %s, step %s; P/D pair, KV over %.4g GB/s\n", rep.Start.Format(time.RFC3339), rep.End.Format(time.RFC3339), rep.Step, rep.KVLink/1e9)
	fmt.Fprintf(w, "requests  %.0f reconstructed at the prefill pool (the decode pool's own: %.0f); prompt mean %.0f tokens (prefill pool), output mean %.0f (decode pool)\n",
		rep.Requests, rep.DecodeRequests, rep.PromptMean, rep.OutputMean)
	for _, c := range []struct {
		role string
		cov  Coverage
	}{{"prefill", rep.Coverage}, {"decode", rep.DecodeCoverage}} {
		fmt.Fprintf(w, "coverage  %s %.1f%% (%d gap(s) longer than %s; %d step(s) interpolated)\n",
			c.role, 100*c.cov.Fraction, len(c.cov.Gaps)+len(c.cov.GaugeGaps), c.cov.Threshold, c.cov.Interpolated)
		if r := c.cov.Requested; r != nil {
			fmt.Fprintf(w, "  range   asked %s .. %s; the %s pool's data covers %s .. %s\n", r.From.Format(time.RFC3339), r.To.Format(time.RFC3339), c.role,
				rep.Start.Format(time.RFC3339), rep.End.Format(time.RFC3339))
		}
		writeGaps(w, c.cov)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\trequests\tSLO miss\tmiss %\tTTFT p95\tITL p95\tprefill rmin\tdecode rmin\ttotal rmin\tvs actual\tpeak P/D\tscale events\t")
	a := rep.Actual
	peak := func(p, d float64) string { return fmtF(p, "%.0f") + "/" + fmtF(d, "%.0f") }
	fmt.Fprintf(tw, "actual (observed)\t%.0f\t-\t-\t-\t-\t%s\t%s\t%s\t-\t%s\t-\t\n", rep.Requests,
		fmtF(a.PrefillMinutes, "%.1f"), fmtF(a.DecodeMinutes, "%.1f"), fmtF(a.Minutes(), "%.1f"), peak(a.PrefillPeak, a.DecodePeak))
	row := func(label string, r PairRow) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%.1f\t%.1f\t%.1f\t%s\t%d/%d\t%d\t\n", label, r.Requests, r.Misses(), replay.FormatPct(r.MissPct()),
			fmtF(r.TTFTP95, "%.2fs"), fmtF(r.ITLP95*1000, "%.1fms"), r.Prefill.ReplicaMinutes(), r.Decode.ReplicaMinutes(), r.ReplicaSeconds()/60,
			fmtF(r.SavingsPct, "%+.1f%%"), r.Prefill.Peak, r.Decode.Peak, r.Prefill.ScaleEvents+r.Decode.ScaleEvents)
	}
	if s := a.Simulated; s != nil {
		row("actual (simulated)", PairRow{PDResult: *s, SavingsPct: math.NaN()})
	}
	for _, r := range rep.Policies {
		row(r.Policy, r)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, l := range []string{
		"rmin: replica-minutes of the pool (starting, ready and draining); vs actual: both pools' replica-minutes saved against the observed replicas (negative: costs more).",
		"TTFT: prefill queue + prefill + KV transfer + decode queue + first decode step; ITL p95: over output tokens, the decode pool's step time; peak P/D: the most replicas of each pool.",
		"actual (observed): each pool's replicas read from Prometheus; actual (simulated): those two timelines replayed. No observed TTFT or fidelity: each pool's vLLM times only its own part of the path.",
		"More: docs/llm-d.md#backtesting-a-pair",
	} {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "time      queries %s (%d), replay %s\n", rep.Fetch.Duration.Round(time.Millisecond), rep.Fetch.Queries, rep.ReplayTime.Round(time.Millisecond))
	for _, wn := range slices.Concat(rep.Fetch.Warnings, rep.Mismatch(), nonEmpty(rep.SLOWarning())) {
		fmt.Fprintf(w, "warning   %s\n", wn)
	}
	return nil
}

// MismatchTolerance is the share by which the pools' request counts may
// differ before Mismatch warns (counts at the range's edges, requests in
// flight between the pools).
const MismatchTolerance = 0.05

// Mismatch warns when the decode pool's reconstructed requests differ
// from the prefill pool's (the pair's arrivals) by more than
// MismatchTolerance: more at decode means llm-d sent some requests there
// without a remote prefill (prompts below its decider's threshold, or
// cached), which the replay does not (it disaggregates every request and
// takes the prefill pool's); fewer means the decode pool's series miss
// some pods.
func (rep PairReport) Mismatch() []string {
	p, d := rep.Requests, rep.DecodeRequests
	switch {
	case d > p*(1+MismatchTolerance)+1:
		return []string{fmt.Sprintf("the decode pool completed %.0f requests, %.0f%% more than the prefill pool's %.0f: llm-d sends short or cached prompts straight to decode; the replay disaggregates the prefill pool's requests only, so the decode pool's load is understated", d, 100*(d-p)/p, p)}
	case d < p*(1-MismatchTolerance)-1:
		return []string{fmt.Sprintf("the decode pool completed %.0f requests, fewer than the prefill pool's %.0f: does roles.decode.selector match all the decode pods?", d, p)}
	}
	return nil
}

// WriteCSV writes one header and one row per policy, the actual rows
// first: simulate --pd's CSV columns plus savings_pct.
func (rep PairReport) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	f, p := csvNum, csvPtr
	cw.Write([]string{"policy", "requests", "slo_misses", "miss_pct", "ttft_p95_s", "itl_p95_s", "prefill_replica_minutes", "decode_replica_minutes", "replica_minutes", "savings_pct", "prefill_peak", "decode_peak", "scale_events"})
	a := rep.Actual
	// Requests whole, as Report.WriteCSV writes them.
	cw.Write([]string{"actual (observed)", f(math.Round(rep.Requests)), "", "", "", "", f(a.PrefillMinutes), f(a.DecodeMinutes), f(a.Minutes()), "", f(a.PrefillPeak), f(a.DecodePeak), ""})
	row := func(label string, r PairRow) {
		jr := pairRowJSON(r)
		cw.Write([]string{label, strconv.FormatInt(jr.Requests, 10), strconv.FormatInt(jr.Misses, 10), f(jr.MissPct), p(jr.TTFTP95), p(jr.ITLP95),
			f(jr.PrefillMinutes), f(jr.DecodeMinutes), f(jr.TotalMinutes), f(r.SavingsPct), strconv.Itoa(jr.PrefillPeak), strconv.Itoa(jr.DecodePeak), strconv.Itoa(jr.ScaleEvents)})
	}
	if s := a.Simulated; s != nil {
		row("actual (simulated)", PairRow{PDResult: *s, SavingsPct: math.NaN()})
	}
	for _, r := range rep.Policies {
		row(r.Policy, r)
	}
	cw.Flush()
	return cw.Error()
}
