package replay

import (
	"encoding/csv"
	"io"
	"strconv"
)

// PDRow is one policy's P/D replay as simulate --pd and backtest on a
// pair report it: the pair's requests and misses (TTFT on the whole
// path), each pool's replica-minutes and peak, both pools' scale events
// (JSON keys as Row's, docs/simulate.md). Unknown numbers are nil.
type PDRow struct {
	Policy          string          `json:"policy"`
	Requests        int64           `json:"requests"`
	Met             int64           `json:"met"`
	Late            int64           `json:"late"`
	Unserved        int64           `json:"unserved"`
	Rejected        int64           `json:"rejected"`
	Misses          int64           `json:"slo_misses"`
	MissPct         float64         `json:"miss_pct"`
	TTFTP50         *float64        `json:"ttft_p50_s"`
	TTFTP95         *float64        `json:"ttft_p95_s"`
	ITLP95          *float64        `json:"itl_p95_s"`
	PrefillMinutes  float64         `json:"prefill_replica_minutes"`
	DecodeMinutes   float64         `json:"decode_replica_minutes"`
	TotalMinutes    float64         `json:"replica_minutes"`
	PrefillPeak     int             `json:"prefill_peak"`
	DecodePeak      int             `json:"decode_peak"`
	ScaleEvents     int             `json:"scale_events"`
	BoundMinutes    *float64        `json:"lower_bound_replica_minutes,omitempty"`
	PrefillTimeline []TimelineEntry `json:"prefill_timeline,omitempty"`
	DecodeTimeline  []TimelineEntry `json:"decode_timeline,omitempty"`
}

// PDCSVHeader is the CSV header of PDRows (WritePDCSV's first line).
var PDCSVHeader = []string{"policy", "requests", "slo_misses", "miss_pct", "ttft_p95_s", "itl_p95_s", "prefill_replica_minutes", "decode_replica_minutes",
	"replica_minutes", "prefill_peak", "decode_peak", "scale_events"}

// CSV is the row's cells under PDCSVHeader (numbers exact, as Row.CSV's;
// unknown ones empty).
func (r PDRow) CSV() []string {
	return []string{r.Policy, strconv.FormatInt(r.Requests, 10), strconv.FormatInt(r.Misses, 10), CSVFloat(r.MissPct),
		csvNum(r.TTFTP95), csvNum(r.ITLP95), CSVFloat(r.PrefillMinutes), CSVFloat(r.DecodeMinutes),
		CSVFloat(r.TotalMinutes), strconv.Itoa(r.PrefillPeak), strconv.Itoa(r.DecodePeak), strconv.Itoa(r.ScaleEvents)}
}

// WritePDCSV writes PDCSVHeader and one line per row (simulate --pd
// --output csv).
func WritePDCSV(w io.Writer, rows []PDRow) error {
	cw := csv.NewWriter(w)
	cw.Write(PDCSVHeader)
	for _, r := range rows {
		cw.Write(r.CSV())
	}
	cw.Flush()
	return cw.Error()
}

// NewPDRow is r as a PDRow, with each pool's timeline when timeline is set.
func NewPDRow(r PDResult, timeline bool) PDRow {
	row := PDRow{Policy: r.Policy, Requests: r.Requests, Met: r.Met, Late: r.Late, Unserved: r.Unserved, Rejected: r.Rejected,
		Misses: r.Misses(), MissPct: r.MissPct(), TTFTP50: FiniteOrNil(r.TTFTP50), TTFTP95: FiniteOrNil(r.TTFTP95), ITLP95: FiniteOrNil(r.ITLP95),
		PrefillMinutes: r.Prefill.ReplicaMinutes(), DecodeMinutes: r.Decode.ReplicaMinutes(), TotalMinutes: r.ReplicaSeconds() / 60,
		PrefillPeak: r.Prefill.Peak, DecodePeak: r.Decode.Peak, ScaleEvents: r.Prefill.ScaleEvents + r.Decode.ScaleEvents}
	if r.LowerBound != nil {
		row.BoundMinutes = FiniteOrNil(r.LowerBound.ReplicaSeconds() / 60)
	}
	if timeline {
		row.PrefillTimeline = NewRow(r.Prefill, 1, 0, true).Timeline
		row.DecodeTimeline = NewRow(r.Decode, 1, 0, true).Timeline
	}
	return row
}

// WritePDTimelineCSV writes the pools' timelines of rows (NewPDRow with
// timeline set) as CSV, one line per policy, role (prefill, decode) and
// period, with WriteTimelineCSV's columns after policy and role.
func WritePDTimelineCSV(w io.Writer, rows []PDRow) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"policy", "role", "t_s", "arrival_rate", "desired", "ready", "starting", "draining", "running", "waiting", "held", "ttft_p95_s", "misses", "reason", "metric"})
	f := CSVFloat
	for _, r := range rows {
		for _, pool := range []struct {
			role string
			tl   []TimelineEntry
		}{{"prefill", r.PrefillTimeline}, {"decode", r.DecodeTimeline}} {
			for _, s := range pool.tl {
				cw.Write([]string{r.Policy, pool.role, f(s.T), f(s.ArrivalRate), strconv.Itoa(s.Desired), strconv.Itoa(s.Ready), strconv.Itoa(s.Starting),
					strconv.Itoa(s.Draining), csvNum(s.Running), csvNum(s.Waiting), csvNum(s.Held), csvNum(s.TTFTP95), strconv.FormatInt(s.Misses, 10), s.Reason, s.Metric})
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
