package backtest

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/history"
	"github.com/infscale/infscale/pkg/profile"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/replica"
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

func truthReplica(c history.Replica) history.Replica {
	c.Step = func(b int) float64 { return truthFixed + truthPerSeq*float64(b) }
	c.TTFT = func(p int) float64 { return truthRequest + float64(p)/truthRate }
	return c
}

// calibrateFrom serves the history, fetches it as backtest does and fits.
func calibrateFrom(t *testing.T, c history.Replica) (CalibrationFit, error) {
	t.Helper()
	srv, truth := history.ServeReplica(t, truthReplica(c))
	api, err := promql.NewClient(promql.ClientConfig{URL: srv.URL, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := promql.ParseSelector(`{namespace="llm"}`)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGrid(truth.Start, truth.End, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tgt := Target{Server: profile.VLLM, Selector: ms}
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
	res, err := calibrateFrom(t, history.Replica{QueuedEvery: 5})
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
	_, err := calibrateFrom(t, history.Replica{Windows: 40, Batches: []int{1}})
	if err == nil || !strings.Contains(err.Error(), "two or more batch sizes") || !strings.Contains(err.Error(), "rounds to 1") {
		t.Errorf("running always 1: %v", err)
	}
	_, err = calibrateFrom(t, history.Replica{Windows: 40, NoITL: true})
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
	res, err := calibrateFrom(t, history.Replica{QueuedEvery: 5, Noise: 0.1, Seed: 7})
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
