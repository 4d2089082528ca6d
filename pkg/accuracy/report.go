package accuracy

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// Row is one stage's metric: predicted against measured.
type Row struct {
	Experiment  string  `json:"experiment"`
	Stage       int     `json:"stage"`
	Metric      Metric  `json:"metric"`
	PredictedMS float64 `json:"predicted_ms"`
	ActualMS    float64 `json:"actual_ms"`
	// ErrorPct is (predicted - actual) / actual × 100: signed.
	ErrorPct float64 `json:"error_pct"`
	// HeldOut marks a row of a model the fit did not see (Report.HeldOut).
	HeldOut bool `json:"held_out,omitempty"`
}

// PeerMAPE is one peer simulator's MAPE on the rows it predicted, beside
// infscale's on the same rows.
type PeerMAPE struct {
	Simulator string `json:"simulator"`
	// Rows is the number of (stage, metric) rows compared per metric.
	Rows     map[Metric]int     `json:"rows"`
	MAPE     map[Metric]float64 `json:"mape"`
	Infscale map[Metric]float64 `json:"infscale_mape"`
}

// Report is accuracy's result.
type Report struct {
	Rows []Row `json:"rows"`
	// MAPE is the mean absolute percentage error per metric over every row.
	MAPE map[Metric]float64 `json:"mape"`
	// FitMAPE and HeldOutMAPE split MAPE by whether the row's model was in
	// the fit; HeldOutModels names the models held out.
	FitMAPE       map[Metric]float64 `json:"fit_mape,omitempty"`
	HeldOutMAPE   map[Metric]float64 `json:"held_out_mape,omitempty"`
	HeldOutModels []string           `json:"held_out_models,omitempty"`
	Peers         []PeerMAPE         `json:"peers,omitempty"`
	// Before is MAPE per metric over the same rows before a change (a
	// calibration), when one was compared; BeforeName names it.
	Before     map[Metric]float64 `json:"mape_before,omitempty"`
	BeforeName string             `json:"before,omitempty"`
}

// Compare builds the report: a row per stage and measured metric with a
// prediction, MAPE per metric (over all rows, the fit's and the held-out
// models'), and each peer's MAPE beside infscale's on the rows the peer
// predicted. heldOut lists model names (case-insensitive) the fit did not
// see.
func Compare(stages []Stage, pred map[Key]map[Metric]float64, peers []Prediction, heldOut []string) Report {
	var r Report
	held := func(model string) bool {
		return slices.ContainsFunc(heldOut, func(h string) bool { return strings.EqualFold(h, model) })
	}
	errs := map[Key]map[Metric]float64{}
	for _, s := range stages {
		for _, m := range Metrics {
			a, ok := s.Measured[m]
			p, ok2 := pred[s.Key()][m]
			if !ok || !ok2 {
				continue
			}
			e := (p - a) / a * 100
			r.Rows = append(r.Rows, Row{Experiment: s.Experiment, Stage: s.StageIndex, Metric: m, PredictedMS: p, ActualMS: a, ErrorPct: e, HeldOut: held(s.Model)})
			if errs[s.Key()] == nil {
				errs[s.Key()] = map[Metric]float64{}
			}
			errs[s.Key()][m] = e
		}
	}
	r.MAPE = mape(r.Rows, func(Row) bool { return true })
	if len(heldOut) > 0 {
		r.HeldOutModels = slices.Clone(heldOut)
		r.FitMAPE = mape(r.Rows, func(x Row) bool { return !x.HeldOut })
		r.HeldOutMAPE = mape(r.Rows, func(x Row) bool { return x.HeldOut })
	}
	bySim := map[string][]Prediction{}
	for _, p := range peers {
		bySim[p.Simulator] = append(bySim[p.Simulator], p)
	}
	names := make([]string, 0, len(bySim))
	for n := range bySim {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		pm := PeerMAPE{Simulator: n, Rows: map[Metric]int{}, MAPE: map[Metric]float64{}, Infscale: map[Metric]float64{}}
		sum, ours := map[Metric]float64{}, map[Metric]float64{}
		for _, p := range bySim[n] {
			e, ok := errs[p.Key][p.Metric]
			if !ok {
				continue // a row infscale did not predict: not the same rows
			}
			var a float64
			for _, s := range stages {
				if s.Key() == p.Key {
					a = s.Measured[p.Metric]
					break
				}
			}
			sum[p.Metric] += math.Abs(p.PredictedMS-a) / a * 100
			ours[p.Metric] += math.Abs(e)
			pm.Rows[p.Metric]++
		}
		for m, k := range pm.Rows {
			pm.MAPE[m] = sum[m] / float64(k)
			pm.Infscale[m] = ours[m] / float64(k)
		}
		if len(pm.Rows) > 0 {
			r.Peers = append(r.Peers, pm)
		}
	}
	return r
}

func mape(rows []Row, keep func(Row) bool) map[Metric]float64 {
	sum, n := map[Metric]float64{}, map[Metric]int{}
	for _, x := range rows {
		if keep(x) {
			sum[x.Metric] += math.Abs(x.ErrorPct)
			n[x.Metric]++
		}
	}
	out := map[Metric]float64{}
	for m, k := range n {
		out[m] = sum[m] / float64(k)
	}
	return out
}

// WriteJSON writes the report as one JSON document.
func (r Report) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

// WriteTable writes the rows, then MAPE per metric, then the peers'.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "experiment\tstage\tmetric\tpredicted ms\tmeasured ms\terror %\t")
	for _, x := range r.Rows {
		st := fmt.Sprint(x.Stage)
		if x.Stage < 0 {
			st = "all"
		}
		name := x.Experiment
		if x.HeldOut {
			name += " *"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f\t%.1f\t%+.1f\t\n", name, st, x.Metric, x.PredictedMS, x.ActualMS, x.ErrorPct)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "MAPE %\trows\t"
	for _, m := range Metrics {
		head += string(m) + "\t"
	}
	fmt.Fprintln(tw, head)
	line := func(name string, rows map[Metric]int, v map[Metric]float64) {
		s := name + "\t"
		n := 0
		for _, m := range Metrics {
			n = max(n, rows[m])
		}
		s += fmt.Sprint(n) + "\t"
		for _, m := range Metrics {
			if x, ok := v[m]; ok {
				s += fmt.Sprintf("%.1f\t", x)
			} else {
				s += "-\t"
			}
		}
		fmt.Fprintln(tw, s)
	}
	count := func(keep func(Row) bool) map[Metric]int {
		c := map[Metric]int{}
		for _, x := range r.Rows {
			if keep(x) {
				c[x.Metric]++
			}
		}
		return c
	}
	if r.Before != nil {
		line("before: "+r.BeforeName, count(func(Row) bool { return true }), r.Before)
	}
	line("infscale (all rows)", count(func(Row) bool { return true }), r.MAPE)
	if len(r.HeldOutModels) > 0 {
		line("infscale (fit models)", count(func(x Row) bool { return !x.HeldOut }), r.FitMAPE)
		line("infscale (held out *)", count(func(x Row) bool { return x.HeldOut }), r.HeldOutMAPE)
	}
	for _, p := range r.Peers {
		line(p.Simulator, p.Rows, p.MAPE)
		line("  infscale, same rows", p.Rows, p.Infscale)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.HeldOutModels) > 0 {
		fmt.Fprintf(w, "\n* held out of the fit: %s\n", strings.Join(r.HeldOutModels, ", "))
	}
	return nil
}
