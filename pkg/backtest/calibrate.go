package backtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/replica"
)

// Window is one pod's means over one window of its history (the
// promql.Calibration queries evaluated at T, the window's end). NaN where
// the query had no value (no token, no request in the window).
type Window struct {
	Pod string
	T   time.Time
	// Running is the mean running gauge; Waiting the most waiting.
	Running, Waiting float64
	// ITL is the mean inter-token latency; TTFT the mean time to first
	// token, seconds; Prompt the prompt tokens per first token.
	ITL, TTFT, Prompt float64
}

// ErrNoCalibrationData reports a history that lacks the families a
// calibration reads (the ITL or TTFT histogram, the prompt token counter).
var ErrNoCalibrationData = errors.New("no calibration data")

// ErrMetricsQL reports a server that evaluates MetricsQL (VictoriaMetrics):
// its rate() also counts the last sample before the window, so a window
// of two scrapes reads three and its counters span one scrape more than
// its gauges; the fit is then off (docs/promql.md#servers: a step
// overhead of 2.45 ms for a truth of 2.00 ms). No PromQL query reads the
// same window on both without knowing the scrape interval.
var ErrMetricsQL = errors.New("calibration needs PromQL's rate() windows")

// FetchWindows reads t's per-pod window means over g through api, windows
// of g.Step ending at each grid point after the first. Errors:
// *promql.QueryError from the client; ErrNoCalibrationData (wrapped,
// naming the families) when the profile or the history has no ITL or no
// TTFT series; ErrMetricsQL (wrapped) when api evaluates MetricsQL.
func FetchWindows(ctx context.Context, api promql.API, t Target, g Grid, progress func(done, total int)) ([]Window, FetchStats, error) {
	if promql.MetricsQL(ctx, api) {
		return nil, FetchStats{}, fmt.Errorf("%w: the server evaluates MetricsQL (VictoriaMetrics), whose rate() also counts the last sample before each window, so the windows overlap and the fit is off; calibrate against a Prometheus holding the same history (docs/promql.md#servers); backtest, profile and tune without --calibrate work on it", ErrMetricsQL)
	}
	q, err := promql.CalibrationQueries(promql.Target{Name: "backtest", Server: t.Server, Selector: t.Selector}, promql.Options{}, g.Step)
	if err != nil {
		return nil, FetchStats{}, err
	}
	fam := t.Server.Families()
	switch {
	case q.ITL == "":
		return nil, FetchStats{}, fmt.Errorf("%w: server %s exports no inter-token latency histogram (calibration reads vLLM's vllm:inter_token_latency_seconds)", ErrNoCalibrationData, t.Server)
	case q.TTFT == "" || q.Prompt == "":
		return nil, FetchStats{}, fmt.Errorf("%w: server %s exports no TTFT histogram or prompt token counter", ErrNoCalibrationData, t.Server)
	}
	queries := []struct {
		query string
		into  func(*Window, float64)
		names []string
	}{
		{q.Running, func(w *Window, v float64) { w.Running = v }, fam.Running},
		{q.Waiting, func(w *Window, v float64) { w.Waiting = v }, fam.Waiting},
		{q.ITL, func(w *Window, v float64) { w.ITL = v }, fam.ITL},
		{q.TTFT, func(w *Window, v float64) { w.TTFT = v }, fam.TTFT},
		{q.Prompt, func(w *Window, v float64) { w.Prompt = v }, fam.PromptTokens},
	}
	f := &fetcher{ctx: ctx, api: api, g: g, total: len(queries), progress: progress}
	began := time.Now()
	byKey := map[string]*Window{}
	for _, c := range queries {
		if c.query == "" {
			continue
		}
		m, err := f.rng(c.query, g.At(1), g.Step)
		if err != nil {
			f.st.Duration = time.Since(began)
			return nil, f.st, err
		}
		if len(m) == 0 && (c.query == q.ITL || c.query == q.TTFT) {
			f.st.Duration = time.Since(began)
			// A rate over a window of one scrape interval or less finds
			// one sample and reads nothing, as a missing family does.
			return nil, f.st, fmt.Errorf("%w: no %s series with two samples in a %s window over %s..%s: the selector's pods export no %s histogram, or are scraped every %s or more (a rate needs two samples in its window: give --calibrate-window at least two scrape intervals)", ErrNoCalibrationData,
				strings.Join(c.names, " or "), g.Step, g.Start.Format(time.RFC3339), g.End().Format(time.RFC3339), c.names[0], g.Step)
		}
		for _, s := range m {
			pod := string(s.Metric[model.LabelName("pod")])
			for _, p := range s.Values {
				k := pod + "@" + p.Timestamp.String()
				w := byKey[k]
				if w == nil {
					nan := math.NaN()
					w = &Window{Pod: pod, T: p.Timestamp.Time().UTC(), Running: nan, Waiting: nan, ITL: nan, TTFT: nan, Prompt: nan}
					byKey[k] = w
				}
				c.into(w, float64(p.Value))
			}
		}
	}
	f.st.Duration = time.Since(began)
	out := make([]Window, 0, len(byKey))
	for _, w := range byKey {
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b Window) int {
		if c := a.T.Compare(b.T); c != 0 {
			return c
		}
		return strings.Compare(a.Pod, b.Pod)
	})
	return out, f.st, nil
}

// CalibrationFit is a fit from history with the windows it used.
type CalibrationFit struct {
	// Calibration is replica.Fit's result, its predictions filled for the
	// held-out decode and prefill points.
	Calibration replica.Calibration
	// Split is the time from which windows are held out.
	Split time.Time
	// DecodeWindows and PrefillWindows count the windows that went into
	// the decode and the prefill points, fitted and held out.
	DecodeWindows, DecodeHeldOut, PrefillWindows, PrefillHeldOut int
	// Notes say what the fit could not do (e.g. one prompt length only).
	Notes []string
}

// HoldOutFraction is the share of a history's time span, at its end, whose
// windows a calibration holds out to measure its error.
const HoldOutFraction = 0.25

// HoldOutSplit is the time from which a calibration holds ws out: the last
// HoldOutFraction of the span the windows cover (first to last window
// time), g's span when there is no window. Not the range asked: a history
// whose data ends an hour before it would hold out a quarter with little
// or no data in it.
func HoldOutSplit(ws []Window, g Grid) time.Time {
	from, to := g.Start, g.End()
	if len(ws) > 0 {
		byTime := func(a, b Window) int { return a.T.Compare(b.T) }
		from, to = slices.MinFunc(ws, byTime).T, slices.MaxFunc(ws, byTime).T
	}
	return from.Add(time.Duration(float64(to.Sub(from)) * (1 - HoldOutFraction))).Truncate(time.Second)
}

// Calibrate fits base's free parameters to history windows with
// replica.Fit, holding out the windows from split on.
//
// Decode: each window with tokens and a mean running of at least 0.5 is a
// decode step of batch round(running), taking the window's mean ITL, each
// sequence holding the window's own prompt tokens per request plus
// outputMean / 2 (a sequence is halfway through its output on average);
// a window without a first token takes its pod's last window's prompt,
// or promptMean before any. Windows are pooled per batch and context bin
// (contexts per sequence in bins 25% wide; the pool's mean ITL and mean
// context), so that windows of different prompts give replica.Fit the
// contexts it fits the KV read efficiency from (its KVNote says whether
// they differed enough). Prefill: each window in which
// nothing waited (waiting's maximum 0) and a first token came is a TTFT at
// the window's prompt tokens per request, pooled in prompt bins 10% wide.
//
// Errors name what the history lacks: fewer than two batch sizes before
// split (running never above 1, say), no window without a queue, no token
// means. With one prompt bin only, the fit keeps base's prefill rate and
// fits the request overhead (a Note says so).
func Calibrate(base replica.Config, ws []Window, promptMean, outputMean float64, split time.Time) (CalibrationFit, error) {
	var res CalibrationFit
	res.Split = split
	if !(promptMean > 0) || !(outputMean >= 0) {
		return res, fmt.Errorf("%w: no prompt or generation token means (the prompt and generation token counters over the range)", ErrNoCalibrationData)
	}
	r, err := replica.New(base)
	if err != nil {
		return res, err
	}
	decode := [2]map[decodeKey]*pool{{}, {}}
	prefill := [2]map[int]*pool{{}, {}}
	maxRunning := 0.0
	lastPrompt := map[string]float64{} // per pod: the latest window's prompt tokens per request
	for _, w := range ws {
		set := 0
		if !w.T.Before(split) {
			set = 1
		}
		prompt, ok := lastPrompt[w.Pod]
		if w.Prompt >= 1 && !math.IsInf(w.Prompt, 0) {
			prompt, ok = w.Prompt, true
			lastPrompt[w.Pod] = prompt
		}
		if !ok {
			prompt = promptMean
		}
		if w.ITL > 0 && !math.IsInf(w.ITL, 0) && w.Running >= 0.5 {
			b := int(math.Round(w.Running))
			if b <= r.MaxBatch() {
				perSeq := prompt + outputMean/2
				k := decodeKey{batch: b, bin: int(math.Round(math.Log(perSeq) / math.Log(1.25)))}
				add(decode[set], k, perSeq, w.ITL)
				if set == 0 {
					res.DecodeWindows++
					maxRunning = max(maxRunning, w.Running)
				} else {
					res.DecodeHeldOut++
				}
			}
		}
		if w.Waiting == 0 && w.TTFT > 0 && !math.IsInf(w.TTFT, 0) && w.Prompt >= 1 && !math.IsInf(w.Prompt, 0) {
			bin := int(math.Round(math.Log(w.Prompt) / math.Log(1.1)))
			add(prefill[set], bin, w.Prompt, w.TTFT)
			if set == 0 {
				res.PrefillWindows++
			} else {
				res.PrefillHeldOut++
			}
		}
	}
	steps := func(m map[decodeKey]*pool) []replica.StepPoint {
		var out []replica.StepPoint
		keys := slices.SortedFunc(maps.Keys(m), func(a, b decodeKey) int {
			if a.batch != b.batch {
				return a.batch - b.batch
			}
			return a.bin - b.bin
		})
		for _, k := range keys {
			a := m[k]
			out = append(out, replica.StepPoint{Batch: k.batch, ContextTokens: int64(math.Round(float64(k.batch) * a.x / a.n)), StepS: a.y / a.n})
		}
		return out
	}
	prefills := func(m map[int]*pool) []replica.PrefillPoint {
		var out []replica.PrefillPoint
		for _, k := range slices.Sorted(maps.Keys(m)) {
			a := m[k]
			out = append(out, replica.PrefillPoint{PromptTokens: int(math.Round(a.x / a.n)), TTFTS: a.y / a.n})
		}
		return out
	}
	fit, held := steps(decode[0]), steps(decode[1])
	if batches := len(slices.CompactFunc(slices.Clone(fit), func(a, b replica.StepPoint) bool { return a.Batch == b.Batch })); batches < 2 {
		what := "no window with tokens and a running batch"
		if res.DecodeWindows > 0 {
			what = fmt.Sprintf("running per pod rounds to %d in all %d windows with tokens (at most %.2f on a window's average)", fit[0].Batch, res.DecodeWindows, maxRunning)
		}
		return res, fmt.Errorf("calibration: the decode fit needs windows at two or more batch sizes before %s; %s: choose a range with busier and quieter periods, or calibrate with infscale load --calibrate",
			split.Format(time.RFC3339), what)
	}
	pre, preHeld := prefills(prefill[0]), prefills(prefill[1])
	switch len(pre) {
	case 0:
		return res, fmt.Errorf("calibration: the prefill fit needs windows before %s in which nothing waited and a first token came; every window had a queue (vllm:num_requests_waiting > 0) or no request", split.Format(time.RFC3339))
	case 1:
		res.Notes = append(res.Notes, fmt.Sprintf("prefill: prompts of about %d tokens only; the prefill rate stays the base's, the request overhead is fitted", pre[0].PromptTokens))
	}
	cal, err := replica.Fit(base, fit, pre, held)
	if err != nil {
		return res, err
	}
	if err := cal.PredictPrefill(base, preHeld); err != nil {
		return res, err
	}
	res.Calibration = cal
	return res, nil
}

// decodeKey is a decode pool: the batch and the context per sequence's
// bin (25% wide).
type decodeKey struct{ batch, bin int }

// pool sums windows: x and y their values, n their count.
type pool struct{ x, y, n float64 }

// add pools the window (x, y) into m[k].
func add[K comparable](m map[K]*pool, k K, x, y float64) {
	a := m[k]
	if a == nil {
		a = &pool{}
		m[k] = a
	}
	a.x, a.y, a.n = a.x+x, a.y+y, a.n+1
}

// HeldOutError is the mean absolute relative error of the held-out
// predictions: decode steps (ITL) and TTFTs, NaN without held-out points.
func (f CalibrationFit) HeldOutError() (itl, ttft float64) {
	itl, ttft = math.NaN(), math.NaN()
	if n := len(f.Calibration.HeldOut); n > 0 {
		itl = 0
		for _, p := range f.Calibration.HeldOut {
			itl += math.Abs(p.Error()) / float64(n)
		}
	}
	if n := len(f.Calibration.PrefillHeldOut); n > 0 {
		ttft = 0
		for _, p := range f.Calibration.PrefillHeldOut {
			ttft += math.Abs(p.Error()) / float64(n)
		}
	}
	return itl, ttft
}

// WriteText prints where the calibration was written, the windows it
// used, the fitted parameters and points (replica.Calibration.WriteText),
// the held-out errors and the notes.
func (f CalibrationFit) WriteText(w io.Writer, path string) error {
	c := f.Calibration
	fmt.Fprintf(w, "\ncalibration written to %s (%s on %d x %s): %d decode and %d prefill windows before %s fitted, %d and %d from then held out\n",
		path, c.Model, c.TP, c.GPU, f.DecodeWindows, f.PrefillWindows, f.Split.Format(time.RFC3339), f.DecodeHeldOut, f.PrefillHeldOut)
	if err := c.WriteText(w, "running", "ITL mean ms"); err != nil {
		return err
	}
	itl, ttft := f.HeldOutError()
	fmt.Fprintf(w, "  held out: ITL mean |error| %s over %d decode points, TTFT mean |error| %s over %d prompt lengths\n",
		fmtF(100*itl, "%.1f%%"), len(c.HeldOut), fmtF(100*ttft, "%.1f%%"), len(c.PrefillHeldOut))
	for _, n := range f.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	return nil
}
