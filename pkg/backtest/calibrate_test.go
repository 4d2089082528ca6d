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
//     part is 8.8230 ms. Prompts cycle 256, 768, 1280, 1792 tokens (mean
//     1024) with 128 output tokens, so a sequence holds 1024 + 64 = 1088
//     tokens of KV on average: 1088 x 131072 B / 2.345e12 B/s = 60.81 us
//     read per sequence, 210.81 us per sequence in all. step(b) = 8.8230 +
//     0.21081 b ms.
//   - prefill: 50 ms of request overhead and half the base's MFU (0.2):
//     24750 / 2 = 12375 tokens/s. TTFT(p) = 50 ms + p / 12375 s.
const (
	truthFixed   = 0.0068230 + 0.002
	truthPerSeq  = 60.81e-6 + 150e-6
	truthRate    = 12375.0
	truthRequest = 0.050
)

func truthReplica(c synthweektest.Replica) synthweektest.Replica {
	c.Step = func(b int) float64 { return truthFixed + truthPerSeq*float64(b) }
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
	if len(cal.Fit) != 6 || len(cal.HeldOut) != 6 || len(cal.Prefill) != 4 || len(cal.PrefillHeldOut) != 4 {
		t.Errorf("points: %d fit, %d held out, %d prefill, %d prefill held out; want 6 batch sizes and 4 prompt lengths each", len(cal.Fit), len(cal.HeldOut), len(cal.Prefill), len(cal.PrefillHeldOut))
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
}

// TestCalibrateNoisy: with every pod's window's step and TTFT off by a
// lognormal factor of sigma 0.1 (10%), about 60 windows pool into each of
// the 6 batch sizes and 4 prompt lengths of each half, so each pooled mean
// is off by about 0.1 / sqrt(60) = 1.3% (and biased by the factor's mean,
// exp(0.005) = +0.5%). The step's fixed part 8.823 ms then reads within
// about 2 x 1.3% = 0.23 ms (the overhead is the fixed part less the 6.823
// ms weights read: 2 +- 0.25 ms), the per-sequence 210.8 us within about
// 3% (150 +- 10 us); the TTFT line's overhead 50 +- 3 ms and its rate
// (MFU 0.2) within 5%. The held-out points, pooled from other windows,
// are predicted within about 2 x 1.3% on average (< 3%).
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
		{"sequence step cost s", cal.SequenceStepCostS, 150e-6, 10e-6},
		{"request overhead s", cal.RequestOverheadS, truthRequest, 0.003},
		{"MFU", cal.MFU, 0.2, 0.01},
	} {
		if math.Abs(c.got-c.want) > c.tol {
			t.Errorf("%s = %.6g, want %.6g within %.2g", c.what, c.got, c.want, c.tol)
		} else {
			t.Logf("%s = %.6g (truth %.6g)", c.what, c.got, c.want)
		}
	}
	itl, ttft := res.HeldOutError()
	t.Logf("held out: ITL mean |error| %.2f%%, TTFT %.2f%%", 100*itl, 100*ttft)
	if !(itl < 0.03) || !(ttft < 0.03) {
		t.Errorf("held-out mean |error|: ITL %.2f%%, TTFT %.2f%%; want < 3%%", 100*itl, 100*ttft)
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
	step := func(b float64) float64 { return truthFixed + truthPerSeq*b }
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
	// Context per sequence: 1024 + 128 / 2 = 1088 tokens, as above.
	res, err := Calibrate(replica.DefaultConfig(), ws, 1024, 128, split)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Calibration
	// Fitted windows 0..29 and b's three at t0: 30 + 1 decode (running 8,
	// waiting 2: the ITL counts, the TTFT does not); held out 30..39.
	if res.DecodeWindows != 31 || res.DecodeHeldOut != 10 || res.PrefillWindows != 30 || res.PrefillHeldOut != 10 {
		t.Errorf("windows: decode %d + %d held out, prefill %d + %d; want 31 + 10, 30 + 10", res.DecodeWindows, res.DecodeHeldOut, res.PrefillWindows, res.PrefillHeldOut)
	}
	if len(c.Fit) != 5 || len(c.HeldOut) != 4 || len(c.Prefill) != 1 || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "512 tokens only") {
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
	itl, ttft := res.HeldOutError()
	t.Logf("%d decode and %d prefill windows fitted; held out: ITL mean |error| %.2f%%, TTFT %.2f%%", res.DecodeWindows, res.PrefillWindows, 100*itl, 100*ttft)
}
