package replay

import (
	"encoding/csv"
	"io"
	"math"
	"slices"
	"strconv"
)

// Row is one policy's result as simulate and backtest report it: the JSON
// and CSV schema of docs/simulate.md ("JSON and CSV"; backtest adds
// savings_pct). Unknown numbers are nil (JSON null, an empty CSV cell).
type Row struct {
	Policy   string `json:"policy"`
	Trace    string `json:"trace"`
	Requests int64  `json:"requests"`
	Met      int64  `json:"met"`
	Late     int64  `json:"late"`
	Unserved int64  `json:"unserved"`
	Rejected int64  `json:"rejected"`
	// Shed is Result.Shed (among Unserved): absent when none was.
	Shed             int64    `json:"shed,omitempty"`
	Misses           int64    `json:"slo_misses"`
	MissPct          float64  `json:"miss_pct"`
	TTFTP50          *float64 `json:"ttft_p50_s"`
	TTFTP95          *float64 `json:"ttft_p95_s"`
	ReplicaMinutes   float64  `json:"replica_minutes"`
	GPUHours         *float64 `json:"gpu_hours"`
	GPUCost          *float64 `json:"gpu_cost"`
	Peak             int      `json:"peak"`
	ScaleEvents      int      `json:"scale_events"`
	Reversals        int      `json:"reversals"`
	OutputTokens     int64    `json:"output_tokens"`
	TokensPerGPUHour *float64 `json:"tokens_per_gpu_hour"`
	Duration         float64  `json:"duration_s"`
	// LowerBoundReplicaMinutes and LowerBoundMisses are `optimal`'s
	// certified bounds (Bound): no schedule meeting every meetable request
	// costs less, none misses fewer; absent for other policies.
	LowerBoundReplicaMinutes *float64        `json:"lower_bound_replica_minutes,omitempty"`
	LowerBoundMisses         *int64          `json:"lower_bound_misses,omitempty"`
	Timeline                 []TimelineEntry `json:"timeline,omitempty"`
}

// TimelineEntry is a Sample with unknown values as JSON null.
type TimelineEntry struct {
	T           float64  `json:"t_s"`
	ArrivalRate float64  `json:"arrival_rate"`
	Desired     int      `json:"desired"`
	Ready       int      `json:"ready"`
	Starting    int      `json:"starting"`
	Draining    int      `json:"draining"`
	Running     *float64 `json:"running"`
	Waiting     *float64 `json:"waiting"`
	Held        *float64 `json:"held"`
	TTFTP95     *float64 `json:"ttft_p95_s"`
	Misses      int64    `json:"misses"`
	// Reason and Metric are Sample's (why the period's count was decided,
	// and by which signal), left out when the policy does not say.
	Reason string `json:"reason,omitempty"`
	Metric string `json:"metric,omitempty"`
}

// FiniteOrNil is &x, nil when x is NaN or ±Inf (unknown: JSON null).
func FiniteOrNil(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// NewRow is r's Row: GPU-hours are replica-hours × gpus (GPUs per
// replica; nil, with the cost and tokens per GPU-hour, when gpus is not
// > 0), the GPU cost GPU-hours × price per GPU-hour (nil when price is NaN:
// not known); the timeline only when asked for.
func NewRow(r Result, gpus, price float64, timeline bool) Row {
	gh := r.ReplicaSeconds / 3600 * gpus
	if !(gpus > 0) {
		gh = math.NaN()
	}
	row := Row{
		Policy: r.Policy, Trace: r.Trace, Requests: r.Requests, Met: r.Met, Late: r.Late, Unserved: r.Unserved, Rejected: r.Rejected, Shed: r.Shed,
		Misses: r.Misses(), MissPct: r.MissPct(), TTFTP50: FiniteOrNil(r.TTFTP50), TTFTP95: FiniteOrNil(r.TTFTP95),
		ReplicaMinutes: r.ReplicaMinutes(), GPUHours: FiniteOrNil(gh), GPUCost: FiniteOrNil(gh * price), Peak: r.Peak, ScaleEvents: r.ScaleEvents,
		Reversals: r.Reversals, OutputTokens: r.OutputTokens, TokensPerGPUHour: FiniteOrNil(r.TokensPerReplicaHour() / gpus), Duration: r.Duration,
	}
	if b := r.LowerBound; b != nil {
		m, n := b.ReplicaSeconds/60, b.Unmeetable
		row.LowerBoundReplicaMinutes, row.LowerBoundMisses = &m, &n
	}
	if timeline {
		for _, s := range r.Timeline {
			row.Timeline = append(row.Timeline, TimelineEntry{s.T, s.ArrivalRate, s.Desired, s.Ready, s.Starting, s.Draining, FiniteOrNil(s.Running), FiniteOrNil(s.Waiting), FiniteOrNil(s.Held), FiniteOrNil(s.TTFTP95), s.Misses, s.Reason, s.Metric})
		}
	}
	return row
}

// csvNum is *p as a CSV cell (CSVFloat), empty when p is nil.
func csvNum(p *float64) string {
	if p == nil {
		return ""
	}
	return CSVFloat(*p)
}

// CSVFloat is x as a CSV cell, the one rule of every CSV that simulate and
// backtest write: the shortest decimal that reads back as x, never in
// exponent form (8537995.389069594, not 8.537995389069594e+06, which a
// spreadsheet may read as text and a reader must decode), exact (a miss
// share of 0.004% is 0.004, not 0.00: budgets are held against it).
func CSVFloat(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// CSVHeader is the CSV header of Rows (WriteCSV's first line).
var CSVHeader = []string{"policy", "trace", "requests", "met", "late", "unserved", "rejected", "slo_misses", "miss_pct", "ttft_p50_s", "ttft_p95_s",
	"replica_minutes", "gpu_hours", "gpu_cost", "peak", "scale_events", "reversals", "output_tokens", "tokens_per_gpu_hour", "duration_s"}

// CSV is the row's cells under CSVHeader (numbers in Go's shortest form,
// unknown ones empty).
func (r Row) CSV() []string {
	f := CSVFloat
	return []string{r.Policy, r.Trace, strconv.FormatInt(r.Requests, 10), strconv.FormatInt(r.Met, 10), strconv.FormatInt(r.Late, 10),
		strconv.FormatInt(r.Unserved, 10), strconv.FormatInt(r.Rejected, 10), strconv.FormatInt(r.Misses, 10), f(r.MissPct),
		csvNum(r.TTFTP50), csvNum(r.TTFTP95), f(r.ReplicaMinutes), csvNum(r.GPUHours), csvNum(r.GPUCost), strconv.Itoa(r.Peak),
		strconv.Itoa(r.ScaleEvents), strconv.Itoa(r.Reversals), strconv.FormatInt(r.OutputTokens, 10), csvNum(r.TokensPerGPUHour), f(r.Duration)}
}

// WriteCSV writes CSVHeader and one line per row.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	cw.Write(CSVHeader)
	for _, r := range rows {
		cw.Write(r.CSV())
	}
	cw.Flush()
	return cw.Error()
}

// WriteTimelineCSV writes the timelines of results as CSV, one line per
// policy and period (docs/simulate.md, "JSON and CSV").
func WriteTimelineCSV(w io.Writer, results []Result) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"policy", "t_s", "arrival_rate", "desired", "ready", "starting", "draining", "running", "waiting", "held", "ttft_p95_s", "misses", "reason", "metric"})
	f := CSVFloat
	for _, r := range results {
		for _, s := range r.Timeline {
			cw.Write([]string{r.Policy, f(s.T), f(s.ArrivalRate), strconv.Itoa(s.Desired), strconv.Itoa(s.Ready), strconv.Itoa(s.Starting),
				strconv.Itoa(s.Draining), csvNum(FiniteOrNil(s.Running)), csvNum(FiniteOrNil(s.Waiting)), csvNum(FiniteOrNil(s.Held)), csvNum(FiniteOrNil(s.TTFTP95)),
				strconv.FormatInt(s.Misses, 10), s.Reason, s.Metric})
		}
	}
	cw.Flush()
	return cw.Error()
}

// RowLegend explains the reference rows among policies, one line each for
// `recommended`, `oracle` and `optimal` when present, for the lines under
// a table (docs/README.md, "Reading the output", has the long form).
// cold is the replayed replica's cold start and slo the TTFT SLO, in
// seconds: `recommended` is written out with the figures it ran with
// (RecommendedShown), the reference replica's at 91 s and 2 s (and when
// either is not known, 0). replica names the replayed replica when it is
// not the one the replica flags describe, "the replica calibrated from
// FILE": the legend says the replay ran on it, even where its cold start,
// and so the policy, is the reference replica's; "" names none.
func RowLegend(policies []string, cold, slo float64, replica string) []string {
	rec := "recommended: infscale's preset policy, " + RecommendedReference + " on the reference replica (lookahead, hold and rampbound follow the replica's cold start, ttft and queuewait the SLO; causal: it sees only the past, as serve does)."
	if shown := RecommendedShown(cold, slo); cold > 0 && slo > 0 && (shown != RecommendedReference || replica != "") {
		where, ref := "here", "; "+RecommendedReference+" on the reference replica"
		if replica != "" {
			where = "on " + replica
		}
		if shown == RecommendedReference {
			ref = ", as on the reference replica"
		}
		rec = "recommended: infscale's preset policy, " + shown + " " + where + " (lookahead, hold and rampbound follow this replica's cold start of " + fnum(math.Ceil(cold)) + " s, ttft and queuewait the " + fnum(slo) + " s SLO" + ref + "; causal: it sees only the past, as serve does)."
	}
	var out []string
	for _, l := range []struct{ name, text string }{
		{"recommended", rec},
		{"oracle", "oracle: reads the arrivals ahead and sizes each 15 s bucket a cold start early: near the least replica time at zero misses, not a policy you can run."},
		{"optimal", "optimal: the cheapest replica schedule found in hindsight with the fewest misses, the limit every other row is measured against; not a policy you can run."},
	} {
		if slices.Contains(policies, l.name) {
			out = append(out, l.text)
		}
	}
	return out
}
