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

	"github.com/infscale/infscale/internal/jsonfloat"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/replica"
)

// num is a float64 that encodes NaN and ±Inf as JSON null (unknown, never 0).
type num = jsonfloat.Float

// jsonRow is one row of the JSON output: simulate's row (replay.Row, the
// one result schema) plus savings_pct.
type jsonRow struct {
	replay.Row
	SavingsPct num `json:"savings_pct"`
}

type jsonActual struct {
	ReplicaMinutes num        `json:"replica_minutes"`
	Peak           num        `json:"peak"`
	TTFTP95        num        `json:"ttft_p95_s"`
	MissPct        num        `json:"miss_pct"`
	MissPctLow     num        `json:"miss_pct_low"`
	MissPctHigh    num        `json:"miss_pct_high"`
	TTFTHourly     []jsonHour `json:"ttft_p95_hourly"`
	Simulated      *jsonRow   `json:"simulated,omitempty"`
}

// jsonHour is a value for the hour ending at T.
type jsonHour struct {
	T         time.Time `json:"t"`
	Observed  num       `json:"observed_s"`
	Simulated *num      `json:"simulated_s,omitempty"`
}

type jsonGap struct {
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	Duration string    `json:"duration"`
}

type jsonCoverage struct {
	Fraction     num       `json:"fraction"`
	Threshold    string    `json:"threshold"`
	Gaps         []jsonGap `json:"gaps"`
	GaugeGaps    []jsonGap `json:"gauge_gaps"`
	Interpolated int       `json:"interpolated_steps"`
	Requested    *jsonGap  `json:"requested,omitempty"`
}

type jsonFidelity struct {
	Hours          int        `json:"hours"`
	Verdict        string     `json:"verdict"`
	Advice         string     `json:"advice"`
	MeanAbsErrorS  num        `json:"mean_abs_error_s"`
	MedianRelError num        `json:"median_rel_error"`
	Pairs          []jsonHour `json:"pairs"`
}

type jsonReport struct {
	Start      time.Time     `json:"start"`
	End        time.Time     `json:"end"`
	Step       string        `json:"step"`
	Requests   num           `json:"requests"`
	PromptMean num           `json:"prompt_tokens_mean"`
	OutputMean num           `json:"output_tokens_mean"`
	Coverage   jsonCoverage  `json:"coverage"`
	Actual     jsonActual    `json:"actual"`
	Policies   []jsonRow     `json:"policies"`
	Fidelity   *jsonFidelity `json:"fidelity,omitempty"`
	QueryTime  num           `json:"query_s"`
	ReplayTime num           `json:"replay_s"`
	Queries    int           `json:"queries"`
	Warnings   []string      `json:"warnings,omitempty"`
	// Calibration is the fit from history with its held-out errors.
	Calibration *jsonCalibration `json:"calibration,omitempty"`
}

type jsonCalibration struct {
	File string `json:"file"`
	replica.Calibration
	Split          time.Time `json:"split"`
	DecodeWindows  int       `json:"decode_windows"`
	DecodeHeldOut  int       `json:"decode_windows_held_out"`
	PrefillWindows int       `json:"prefill_windows"`
	PrefillHeldOut int       `json:"prefill_windows_held_out"`
	HeldOutITL     num       `json:"held_out_itl_mean_abs_error"`
	HeldOutTTFT    num       `json:"held_out_ttft_mean_abs_error"`
	Notes          []string  `json:"notes,omitempty"`
}

func (rep Report) rowOf(r Row) jsonRow {
	return jsonRow{Row: replay.NewRow(r.Result, rep.GPUs, math.NaN(), false), SavingsPct: num(r.SavingsPct)}
}

// WriteJSON writes the report as one JSON object: requests, coverage,
// actual (with replica_minutes), policies (the simulate rows with
// savings_pct), fidelity, and query/replay times. Unknown numbers are null.
func (rep Report) WriteJSON(w io.Writer) error {
	out := jsonReport{Start: rep.Start, End: rep.End, Step: rep.Step.String(), Requests: num(rep.Requests),
		PromptMean: num(rep.PromptMean), OutputMean: num(rep.OutputMean),
		Coverage: coverageJSON(rep.Coverage),
		Actual: jsonActual{ReplicaMinutes: num(rep.Actual.ReplicaMinutes), Peak: num(rep.Actual.Peak),
			TTFTP95: num(rep.Actual.TTFTP95), MissPct: num(rep.Actual.MissPct),
			MissPctLow: num(rep.Actual.MissPctLow), MissPctHigh: num(rep.Actual.MissPctHigh)},
		Policies:   []jsonRow{},
		QueryTime:  num(rep.Fetch.Duration.Seconds()),
		ReplayTime: num(rep.ReplayTime.Seconds()),
		Queries:    rep.Fetch.Queries,
		Warnings:   slices.Concat(rep.readWarnings(), nonEmpty(rep.SLOWarning()), rep.Runaway()),
	}
	out.Actual.TTFTHourly = []jsonHour{}
	for _, h := range rep.TTFTHourly {
		out.Actual.TTFTHourly = append(out.Actual.TTFTHourly, jsonHour{T: h.T, Observed: num(h.V)})
	}
	if s := rep.Actual.Simulated; s != nil {
		r := rep.rowOf(Row{Result: *s, SavingsPct: math.NaN()})
		out.Actual.Simulated = &r
	}
	for _, r := range rep.Policies {
		out.Policies = append(out.Policies, rep.rowOf(r))
	}
	if f := rep.Fidelity; f != nil {
		grade, advice := f.Verdict(rep.SLOTTFT)
		out.Fidelity = &jsonFidelity{Hours: f.Hours, Verdict: grade, Advice: advice, MeanAbsErrorS: num(f.MeanAbsErrorS), MedianRelError: num(f.MedianRelError)}
		for _, p := range f.Pairs {
			sim := num(p.Simulated)
			out.Fidelity.Pairs = append(out.Fidelity.Pairs, jsonHour{T: p.T, Observed: num(p.Observed), Simulated: &sim})
		}
	}
	if c := rep.Calibration; c != nil {
		itl, ttft := c.HeldOutError()
		out.Calibration = &jsonCalibration{File: rep.CalibrationFile, Calibration: c.Calibration, Split: c.Split,
			DecodeWindows: c.DecodeWindows, DecodeHeldOut: c.DecodeHeldOut, PrefillWindows: c.PrefillWindows, PrefillHeldOut: c.PrefillHeldOut,
			HeldOutITL: num(itl), HeldOutTTFT: num(ttft), Notes: c.Notes}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func fmtF(f float64, format string) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "-"
	}
	return fmt.Sprintf(format, f)
}

// WriteText writes the summary (range, requests, coverage, gaps), the
// table (an actual row, then one row per policy with savings versus
// actual) and the fidelity line.
func (rep Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "history   %s .. %s, step %s\n", rep.Start.Format(time.RFC3339), rep.End.Format(time.RFC3339), rep.Step)
	fmt.Fprintf(w, "requests  %.0f reconstructed (prompt mean %.0f, output mean %.0f tokens)\n", rep.Requests, rep.PromptMean, rep.OutputMean)
	fmt.Fprintf(w, "coverage  %.1f%% (%d gap(s) longer than %s; %d step(s) interpolated)\n",
		100*rep.Coverage.Fraction, len(rep.Coverage.Gaps)+len(rep.Coverage.GaugeGaps), rep.Coverage.Threshold, rep.Coverage.Interpolated)
	if r := rep.Coverage.Requested; r != nil {
		fmt.Fprintf(w, "  range   asked %s .. %s; the data covers only the range above\n", r.From.Format(time.RFC3339), r.To.Format(time.RFC3339))
	}
	writeGaps(w, rep.Coverage)
	if c := rep.Calibration; c != nil {
		if err := c.WriteText(w, rep.CalibrationFile); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\trequests\tSLO miss\tmiss %\tTTFT p50\tTTFT p95\treplica-min\tvs actual\tpeak\tscale events\t")
	a := rep.Actual
	fmt.Fprintf(tw, "actual (observed)\t%.0f\t-\t%s\t-\t%s\t%s\t-\t%s\t-\t\n", rep.Requests, replay.FormatPct(a.MissPct),
		fmtF(a.TTFTP95, "%.2fs"), fmtF(a.ReplicaMinutes, "%.1f"), fmtF(a.Peak, "%.0f"))
	row := func(label string, r Row) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%.1f\t%s\t%d\t%d\t\n", label, r.Requests, r.Misses(), replay.FormatPct(r.MissPct()),
			fmtF(r.TTFTP50, "%.2fs"), fmtF(r.TTFTP95, "%.2fs"), r.ReplicaMinutes(), fmtF(r.SavingsPct, "%+.1f%%"), r.Peak, r.ScaleEvents)
	}
	if s := a.Simulated; s != nil {
		row("actual (simulated)", Row{Result: *s, SavingsPct: math.NaN()})
	}
	for _, r := range rep.Policies {
		row(r.Policy, r)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "vs actual: replica-minutes saved against the observed replicas (negative: costs more).")
	if a.MissPctHigh > a.MissPctLow {
		fmt.Fprintf(w, "actual (observed) miss %%: %s splits the TTFT bucket holding the %s SLO linearly; the buckets bound it between %s and %s (an SLO at a bucket bound reads it exactly).\n",
			replay.FormatPct(a.MissPct), strconv.FormatFloat(rep.SLOTTFT, 'g', -1, 64)+"s", replay.FormatPct(a.MissPctLow), replay.FormatPct(a.MissPctHigh))
	}
	for _, l := range rep.legend() {
		fmt.Fprintln(w, l)
	}
	if f := rep.Fidelity; f != nil {
		grade, advice := f.Verdict(rep.SLOTTFT)
		hours := fmt.Sprintf("%d hours", f.Hours)
		if f.Hours == 1 {
			hours = "1 hour"
		}
		fmt.Fprintf(w, "fidelity  simulated vs observed TTFT p95 over %s: mean |error| %.2fs, median relative error %s: %s (%s)\n",
			hours, f.MeanAbsErrorS, fmtF(100*f.MedianRelError, "%.0f%%"), grade, advice)
	} else {
		fmt.Fprintln(w, "fidelity  not available ("+rep.noFidelity()+")")
	}
	fmt.Fprintf(w, "time      queries %s (%d), replay %s\n", rep.Fetch.Duration.Round(time.Millisecond), rep.Fetch.Queries, rep.ReplayTime.Round(time.Millisecond))
	for _, wn := range rep.readWarnings() {
		fmt.Fprintf(w, "warning   %s\n", wn)
	}
	for _, wn := range append(nonEmpty(rep.SLOWarning()), rep.Runaway()...) {
		fmt.Fprintf(w, "warning   %s\n", wn)
	}
	return nil
}

// WriteCSV writes one header and one row per policy, the actual rows first:
// a selection of the row schema's columns (replay.Row's CSV names) plus
// savings_pct, the layout docs/backtest.md gives.
func (rep Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	f, p := csvNum, csvPtr
	cw.Write([]string{"policy", "requests", "misses", "miss_pct", "ttft_p50_s", "ttft_p95_s", "replica_minutes", "savings_pct", "peak", "scale_events"})
	a := rep.Actual
	// The reconstructed total sums counter increases (1058463.2); the
	// column holds request counts, whole as the text prints it.
	cw.Write([]string{"actual (observed)", f(math.Round(rep.Requests)), "", f(a.MissPct), "", f(a.TTFTP95), f(a.ReplicaMinutes), "", f(a.Peak), ""})
	row := func(label string, r Row) {
		jr := rep.rowOf(r)
		cw.Write([]string{label, strconv.FormatInt(jr.Requests, 10), strconv.FormatInt(jr.Misses, 10), f(jr.MissPct),
			p(jr.TTFTP50), p(jr.TTFTP95), f(jr.ReplicaMinutes), f(r.SavingsPct), strconv.Itoa(jr.Peak), strconv.Itoa(jr.ScaleEvents)})
	}
	if s := a.Simulated; s != nil {
		row("actual (simulated)", Row{Result: *s, SavingsPct: math.NaN()})
	}
	for _, r := range rep.Policies {
		row(r.Policy, r)
	}
	cw.Flush()
	return cw.Error()
}

// legend explains the table's columns and its reference rows, printed
// under it (docs/README.md, "Reading the output", has the long form).
func (rep Report) legend() []string {
	out := []string{
		"replica-min: replicas x minutes, starting and draining ones too (GPU-hours = replica-min / 60 x GPUs per replica); peak: the most replicas; scale events: changes of the replica count.",
		"actual (observed): what ran, read from Prometheus; actual (simulated): that replica timeline replayed (the fidelity check below).",
	}
	var names []string
	for _, r := range rep.Policies {
		names = append(names, r.Policy)
	}
	out = append(out, replay.RowLegend(names, rep.ColdStart, rep.SLOTTFT, rep.Replica)...)
	return append(out, "More on the words and units: docs/README.md#reading-the-output; the warnings and the fidelity grades: docs/backtest.md")
}

// csvNum is v as a CSV cell: empty when NaN or infinite.
func csvNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return replay.CSVFloat(v)
}

// csvPtr is *v as a CSV cell: empty when nil (not measured).
func csvPtr(v *float64) string {
	if v == nil {
		return ""
	}
	return csvNum(*v)
}

// writeGaps writes cov's gaps, one line each: the counter's, then the
// in-flight gauges'.
func writeGaps(w io.Writer, cov Coverage) {
	for _, g := range cov.Gaps {
		fmt.Fprintf(w, "  gap     %s .. %s (%s): no samples; arrivals spread from the counters' increase\n",
			g.From.Format(time.RFC3339), g.To.Format(time.RFC3339), g.Duration())
	}
	for _, g := range cov.GaugeGaps {
		fmt.Fprintf(w, "  gap     %s .. %s (%s): no running/waiting samples; in flight interpolated\n",
			g.From.Format(time.RFC3339), g.To.Format(time.RFC3339), g.Duration())
	}
}

// noFidelity says why the report has no fidelity line: the range is under
// the hour the observed TTFT p95 is read per (fetch.go asks none then),
// no replica timeline was read, no hour had an observed p95, or no hour
// had both it and replayed requests. It said "needs the replicas timeline
// and the TTFT histogram" for all four, so a backtest of a 4-minute
// incident with both at hand sent the reader after series that were there.
func (rep Report) noFidelity() string {
	observed := false
	for _, h := range rep.TTFTHourly {
		observed = observed || !(math.IsNaN(h.V) || math.IsInf(h.V, 0))
	}
	switch span := rep.End.Sub(rep.Start); {
	case span < time.Hour:
		return "it compares the observed and the simulated TTFT p95 hour by hour, and the range is " + span.String() + ": give --start and --end an hour or more apart"
	case rep.Actual.Simulated == nil:
		return "needs the replicas timeline: the replicas that ran were not read, a warning below says why"
	case !observed:
		return "needs the TTFT histogram: no hour of the range has an observed TTFT p95"
	default:
		return "no hour of the range has both an observed TTFT p95 and requests in the replay"
	}
}
