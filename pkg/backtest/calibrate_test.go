package backtest

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/synthweek"
	"github.com/infscale/infscale/pkg/synthweek/synthweektest"
)

// The replica behind the synthetic history, relative to the base model
// (replica.DefaultConfig: Llama-3-8B FP16 on an H100 SXM, bandwidth
// efficiency 0.7, MFU 0.4):
//
//   - decode: a 2 ms step overhead and 150 us per running sequence. The
//     weights read in 16e9 B / (3.35e12 x 0.7 B/s) = 6.8230 ms, so the fixed
//     part is 8.8230 ms. Prompts cycle 256, 768, 1280, 1792 tokens over the
//     windows with 128 output tokens, so a window's sequences hold prompt +
//     64 tokens of KV each (320 to 1,856; 1,088 on average), read at 131072
//     B / 2.345e12 B/s = 55.894 ns a token: step(b, c) = 8.8230 ms + b x
//     (150 us + c x 55.894 ns), 210.81 us a sequence at the mean.
//   - prefill: 50 ms of request overhead and half the base's MFU (0.2):
//     24750 / 2 = 12375 tokens/s. TTFT(p) = 50 ms + p / 12375 s.
const (
	truthFixed   = 0.0068230 + 0.002
	truthSeq     = 150e-6
	truthKV      = 131072 / 2.345e12
	truthPerSeq  = 1088*truthKV + truthSeq
	truthRate    = 12375.0
	truthRequest = 0.050
)

func truthReplica(c synthweektest.Replica) synthweektest.Replica {
	c.Step = func(b, ctx int) float64 { return truthFixed + float64(b)*(truthSeq+float64(ctx)*truthKV) }
	c.TTFT = func(p int) float64 { return truthRequest + float64(p)/truthRate }
	return c
}

// calibrateFrom serves the history, fetches it as backtest does and fits.
func calibrateFrom(t *testing.T, c synthweektest.Replica) (CalibrationFit, error) {
	t.Helper()
	srv, truth := synthweektest.ServeReplica(t, truthReplica(c))
	api, ms, g := llmHistory(t, srv.URL, truth.Start, truth.End)
	tgt := Target{Server: modelserver.VLLM, Selector: ms}
	h, _, err := Fetch(context.Background(), api, tgt, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws, _, err := FetchWindows(context.Background(), api, tgt, g, nil)
	if err != nil {
		return CalibrationFit{}, err
	}
	split := g.Start.Add(time.Duration(float64(g.End().Sub(g.Start)) * (1 - HoldOutFraction)))
	return Calibrate(replica.DefaultConfig(), ws, h.PromptMean, h.OutputMean, split)
}

// TestCalibrateFromPrometheus: the fit recovers the parameters that
// generated the history (above), and predicts the held-out last quarter
// (the same replica) within 1%. Every fifth window has a queue whose TTFTs
// are 0.5 s longer: had they been fitted, the overhead would read about
// 150 ms, not 50.
func TestCalibrateFromPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	res, err := calibrateFrom(t, synthweektest.Replica{QueuedEvery: 5})
	if err != nil {
		t.Fatal(err)
	}
	cal := res.Calibration
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %.6g, want %.6g within %.2g", what, got, want, tol)
		} else {
			t.Logf("%s = %.6g (truth %.6g)", what, got, want)
		}
	}
	near("bandwidth efficiency", cal.BandwidthEfficiency, 0.7, 1e-9)
	// The windows' contexts differ 5.8x (320 to 1,856 tokens a sequence):
	// the KV read is fitted, at the truth's 0.7.
	near("KV bandwidth efficiency", cal.KVBandwidthEfficiency, 0.7, 1e-3)
	if !strings.Contains(cal.KVNote, "fitted from the decode points' contexts of 320 to 1856 tokens a sequence (5.80x)") {
		t.Errorf("KV note %q", cal.KVNote)
	}
	near("step overhead s", cal.StepOverheadS, 0.002, 2e-6)
	near("sequence step cost s", cal.SequenceStepCostS, 150e-6, 1e-6)
	near("request overhead s", cal.RequestOverheadS, truthRequest, 1e-4)
	near("MFU", cal.MFU, 0.2, 1e-3)
	// 240 windows x 2 pods over 240 minutes, window i ending at minute
	// i + 1; the last quarter (windows ending at minute 180 or later,
	// 179..239) is held out: 179 x 2 = 358 windows fitted, 61 x 2 = 122 held.
	if res.DecodeWindows != 358 || res.DecodeHeldOut != 122 {
		t.Errorf("decode windows %d fitted, %d held out; want 358 and 122", res.DecodeWindows, res.DecodeHeldOut)
	}
	// Every fifth window queued (windows 4, 9, 14, ...): of the fitted
	// windows 0..178, 4..174 are 35 per pod (70 drop); of the held-out
	// 179..239, 179..239 are 13 per pod (26 drop).
	if res.PrefillWindows != 358-70 || res.PrefillHeldOut != 122-26 {
		t.Errorf("prefill windows %d fitted, %d held out; want %d and %d", res.PrefillWindows, res.PrefillHeldOut, 358-70, 122-26)
	}
	// Pod k's window i runs batch (i+k) mod 6 and prompt (i+k) mod 4 of
	// the cycles: 12 pairs (each batch at two prompts), in both halves.
	if len(cal.Fit) != 12 || len(cal.HeldOut) != 12 || len(cal.Prefill) != 4 || len(cal.PrefillHeldOut) != 4 {
		t.Errorf("points: %d fit, %d held out, %d prefill, %d prefill held out; want 12 batch and context pairs and 4 prompt lengths each", len(cal.Fit), len(cal.HeldOut), len(cal.Prefill), len(cal.PrefillHeldOut))
	}
	for _, p := range cal.HeldOut {
		if math.Abs(p.Error()) > 0.01 {
			t.Errorf("held-out batch %d: step %.4f ms, predicted %.4f: error %+.2f%%", p.Batch, p.StepS*1000, p.PredictedS*1000, 100*p.Error())
		}
	}
	for _, p := range cal.PrefillHeldOut {
		if math.Abs(p.Error()) > 0.01 {
			t.Errorf("held-out prompt %d: TTFT %.4f s, predicted %.4f: error %+.2f%%", p.PromptTokens, p.TTFTS, p.PredictedS, 100*p.Error())
		}
	}
}

// TestCalibrateRefuses: a history whose pods never run more than one
// sequence has no decode slope, and one without the ITL histogram nothing
// to fit; each is refused saying so.
func TestCalibrateRefuses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	_, err := calibrateFrom(t, synthweektest.Replica{Windows: 40, Batches: []int{1}})
	if err == nil || !strings.Contains(err.Error(), "two or more batch sizes") || !strings.Contains(err.Error(), "rounds to 1") {
		t.Errorf("running always 1: %v", err)
	}
	_, err = calibrateFrom(t, synthweektest.Replica{Windows: 40, NoITL: true})
	if !errors.Is(err, ErrNoCalibrationData) || !strings.Contains(err.Error(), "vllm:inter_token_latency_seconds") {
		t.Errorf("no ITL histogram: %v", err)
	}
	// Scraped every minute, the history's 1m calibration windows hold one
	// sample each and rate() reads nothing, though the histograms are
	// there: the error names the window and the scrape interval, not only
	// a missing family (it said "the selector's pods export no
	// vllm:inter_token_latency_seconds histogram").
	_, err = calibrateFrom(t, synthweektest.Replica{Windows: 40, Scrape: time.Minute})
	if !errors.Is(err, ErrNoCalibrationData) || !strings.Contains(err.Error(), "two samples in a 1m0s window") || !strings.Contains(err.Error(), "--calibrate-window") {
		t.Errorf("windows of one scrape: %v", err)
	}
}

// TestCalibrateNoisy: with every pod's window's step and TTFT off by a
// lognormal factor of sigma 0.1 (10%), about 30 windows pool into each of
// the 12 batch and context pairs of each half (60 into each of the 4
// prompt lengths), so each pooled step is off by about 0.1 / sqrt(30) =
// 1.8% (and biased by the factor's mean, exp(0.005) = +0.5%). Through the
// plane step = a + s·batch + k·context over the 12 pairs (the standard
// errors below are Σ (wᵢ · 1.8% · stepᵢ)² under the root, wᵢ the least
// squares weights of the pairs' batches and contexts, worked out by hand)
// the fixed part 8.823 ms has a standard error of 75 us (the overhead
// reads 2 +- 0.25 ms), the per-sequence cost s 13 us (150 +- 40 us), the
// KV read k 17% (the efficiency 0.7 / (1 +- 0.51): 0.46 or more), and a
// sequence's whole cost at the mean context, s + 1,088·k = 210.8 us, 6.9
// us (+- 21 us): the KV read and the per-sequence cost trade, their sum
// holds. The TTFT line's overhead 50 +- 3 ms and its rate (MFU 0.2) within
// 5%. The held-out points, pooled from other windows, are predicted
// within about 2 x 1.8% on average (< 4%).
func TestCalibrateNoisy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	res, err := calibrateFrom(t, synthweektest.Replica{QueuedEvery: 5, Noise: 0.1, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	cal := res.Calibration
	for _, c := range []struct {
		what           string
		got, want, tol float64
	}{
		{"step overhead s", cal.StepOverheadS, 0.002, 0.00025},
		{"sequence step cost s", cal.SequenceStepCostS, 150e-6, 40e-6},
		{"per sequence at 1,088 tokens s", cal.SequenceStepCostS + 1088*131072/(3.35e12*cal.KVBandwidthEfficiency), truthPerSeq, 21e-6},
		{"request overhead s", cal.RequestOverheadS, truthRequest, 0.003},
		{"MFU", cal.MFU, 0.2, 0.01},
	} {
		if math.Abs(c.got-c.want) > c.tol {
			t.Errorf("%s = %.6g, want %.6g within %.2g", c.what, c.got, c.want, c.tol)
		} else {
			t.Logf("%s = %.6g (truth %.6g)", c.what, c.got, c.want)
		}
	}
	if cal.KVBandwidthEfficiency < 0.46 {
		t.Errorf("KV bandwidth efficiency %.3f (%s): want 0.7, 0.46 or more within the noise", cal.KVBandwidthEfficiency, cal.KVNote)
	} else {
		t.Logf("KV bandwidth efficiency %.3f (truth 0.7): %s", cal.KVBandwidthEfficiency, cal.KVNote)
	}
	itl, ttft := res.HeldOutError()
	t.Logf("held out: ITL mean |error| %.2f%%, TTFT %.2f%%", 100*itl, 100*ttft)
	if !(itl < 0.04) || !(ttft < 0.04) {
		t.Errorf("held-out mean |error|: ITL %.2f%%, TTFT %.2f%%; want < 4%%", 100*itl, 100*ttft)
	}
}

// TestCalibratePooling: windows from the truth replica (no Prometheus),
// with those Calibrate must leave out: a batch rounding to 0 (running
// 0.3), an ITL of NaN (no token), a queue (waiting 2, its TTFT 1 s too
// long). One prompt length only: the rate stays the base's (MFU 0.4) and
// the overhead takes the rest of the TTFT: 50 ms + 512 / 12375 s - 512 /
// 24750 s = 70.69 ms. No window without a queue, or no token means: refused.
func TestCalibratePooling(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	nan := math.NaN()
	step := func(b float64) float64 { return truthFixed + b*(truthSeq+576*truthKV) } // 512 + 128 / 2 tokens a sequence
	ttft := func(p float64) float64 { return truthRequest + p/truthRate }
	var ws []Window
	for i := range 40 {
		b := float64([]int{1, 4, 16, 32}[i%4])
		ws = append(ws, Window{Pod: "a", T: t0.Add(time.Duration(i) * time.Minute), Running: b, Waiting: 0, ITL: step(b), TTFT: ttft(512), Prompt: 512})
	}
	ws = append(ws,
		Window{Pod: "b", T: t0, Running: 0.3, Waiting: 0, ITL: 1, TTFT: nan, Prompt: nan},
		Window{Pod: "b", T: t0, Running: 8, Waiting: 0, ITL: nan, TTFT: nan, Prompt: nan},
		Window{Pod: "b", T: t0, Running: 8, Waiting: 2, ITL: step(8), TTFT: ttft(512) + 1, Prompt: 512})
	split := t0.Add(30 * time.Minute)
	// Pod c runs 4 sequences of 2,000-token prompts (2,064 tokens a
	// sequence); its second window has no first token and takes the first's
	// prompt (pooled with it: one point at batch 4 and 2,064 tokens).
	ws = append(ws,
		Window{Pod: "c", T: t0, Running: 4, Waiting: 0, ITL: truthFixed + 4*(truthSeq+2064*truthKV), TTFT: nan, Prompt: 2000},
		Window{Pod: "c", T: t0.Add(time.Minute), Running: 4, Waiting: 0, ITL: truthFixed + 4*(truthSeq+2064*truthKV), TTFT: nan, Prompt: nan})
	// Context per sequence: each window's own prompt + 128 / 2 tokens (a's
	// 576), not the range's mean 1024 + 64.
	res, err := Calibrate(replica.DefaultConfig(), ws, 1024, 128, split)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Calibration
	// Fitted windows 0..29, b's three at t0 (running 8, waiting 2: the
	// ITL counts, the TTFT does not) and c's two: 30 + 1 + 2 decode; held
	// out 30..39.
	if res.DecodeWindows != 33 || res.DecodeHeldOut != 10 || res.PrefillWindows != 30 || res.PrefillHeldOut != 10 {
		t.Errorf("windows: decode %d + %d held out, prefill %d + %d; want 33 + 10, 30 + 10", res.DecodeWindows, res.DecodeHeldOut, res.PrefillWindows, res.PrefillHeldOut)
	}
	if !slices.Contains(c.Fit, replica.StepPoint{Batch: 4, ContextTokens: 4 * 2064, StepS: truthFixed + 4*(truthSeq+2064*truthKV), PredictedS: c.Fit[2].PredictedS}) {
		t.Errorf("fit points %+v: want c's two windows as one at batch 4 and 2,064 tokens a sequence", c.Fit)
	}
	if len(c.Fit) != 6 || len(c.HeldOut) != 4 || len(c.Prefill) != 1 || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "512 tokens only") {
		t.Errorf("points: %d fit, %d held out, %d prefill, notes %q", len(c.Fit), len(c.HeldOut), len(c.Prefill), res.Notes)
	}
	if math.Abs(c.StepOverheadS-0.002) > 1e-6 || math.Abs(c.SequenceStepCostS-150e-6) > 1e-7 {
		t.Errorf("step overhead %g, per sequence %g; want 0.002, 150e-6", c.StepOverheadS, c.SequenceStepCostS)
	}
	if math.Abs(c.MFU-0.4) > 1e-9 || math.Abs(c.RequestOverheadS-0.07069) > 1e-5 {
		t.Errorf("MFU %g, request overhead %g; want 0.4 and 70.69 ms", c.MFU, c.RequestOverheadS)
	}
	queued := slices.Clone(ws)
	for i := range queued {
		queued[i].Waiting = 1
	}
	if _, err := Calibrate(replica.DefaultConfig(), queued, 1024, 128, split); err == nil || !strings.Contains(err.Error(), "nothing waited") {
		t.Errorf("always queued: %v", err)
	}
	if _, err := Calibrate(replica.DefaultConfig(), ws, nan, nan, split); !errors.Is(err, ErrNoCalibrationData) {
		t.Errorf("no token means: %v", err)
	}
}

// TestCalibrateFromWeek: `infscale synth-week`'s week (pkg/synthweek's
// Write, the default Config) writes its ITL and TTFT histograms from
// synthweek.WeekReplica: the base replica with a 2 ms step overhead, 150 us
// per sequence and 50 ms of request overhead, MFU the base's 0.4. Its
// prompts have one mix all week (mean 805 tokens), so the TTFT line has
// one prompt length: the rate stays the base's (the truth here) and the
// overhead is the rest, 50 ms. The pods' batches (running 64 at most,
// about 10-20 as the Deployment follows the daily cycle) give the decode
// line. Held to docs/evaluation/ACCURACY.md's tolerances for the Prometheus-history
// fit with noise: 2 +- 0.25 ms, 150 +- 10 us, 50 +- 3 ms, MFU +- 0.01.
func TestCalibrateFromWeek(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled week")
	}
	srv, truth := synthweektest.Serve(t, synthweek.Config{}) // 60 s scrapes, as infscale synth-week writes by default
	api, ms, g := llmHistory(t, srv.URL, truth.Start, truth.End)
	tgt := Target{Server: modelserver.VLLM, Selector: ms}
	h, _, err := Fetch(context.Background(), api, tgt, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	cg, err := NewGrid(truth.Start, truth.End, 2*time.Minute) // backtest's default --calibrate-window
	if err != nil {
		t.Fatal(err)
	}
	ws, _, err := FetchWindows(context.Background(), api, tgt, cg, nil)
	if err != nil {
		t.Fatal(err)
	}
	split := cg.Start.Add(time.Duration(float64(cg.End().Sub(cg.Start)) * (1 - HoldOutFraction)))
	res, err := Calibrate(replica.DefaultConfig(), ws, h.PromptMean, h.OutputMean, split)
	if err != nil {
		t.Fatal(err)
	}
	synthweektest.CheckWeekCalibration(t, res.Calibration)
	// One prompt mix all week: one context per sequence, the KV read kept
	// at the weights' efficiency.
	if res.Calibration.KVBandwidthEfficiency != 0 || !strings.Contains(res.Calibration.KVNote, "differ less than the 1.5x") {
		t.Errorf("KV efficiency %v, note %q; want the weights' (0) and the contexts' spread named", res.Calibration.KVBandwidthEfficiency, res.Calibration.KVNote)
	}
	t.Log(res.Calibration.KVNote)
	itl, ttft := res.HeldOutError()
	t.Logf("%d decode and %d prefill windows fitted; held out: ITL mean |error| %.2f%%, TTFT %.2f%%", res.DecodeWindows, res.PrefillWindows, 100*itl, 100*ttft)
}

// TestHoldOutSplit: the held-out quarter is of the span the windows cover,
// not of the range asked: windows of two pods from 00:00 to 03:00 (given
// out of order) in a 4 h range asked hold out from 02:15 (3 h x 0.75;
// the range would put it at 03:00, where an hour with no data begins).
// Without windows, the range's: 03:00.
func TestHoldOutSplit(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	g, err := NewGrid(t0, t0.Add(4*time.Hour), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ws := []Window{
		{Pod: "b", T: t0.Add(90 * time.Minute)},
		{Pod: "a", T: t0.Add(3 * time.Hour)},
		{Pod: "a", T: t0},
		{Pod: "b", T: t0.Add(time.Hour)},
	}
	if got, want := HoldOutSplit(ws, g), t0.Add(135*time.Minute); !got.Equal(want) {
		t.Errorf("split %s, want %s", got, want)
	}
	if got, want := HoldOutSplit(nil, g), t0.Add(3*time.Hour); !got.Equal(want) {
		t.Errorf("no windows: split %s, want %s", got, want)
	}
}
