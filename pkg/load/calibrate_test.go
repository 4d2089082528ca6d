package load

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/fleet"
	"github.com/infscale/infscale/pkg/replica"
)

// TestCalibrateHoldsOut: the fleet runs a replica the default model does
// not describe (the reference three times slower, plus 150 us per running
// sequence per step and 30 ms before the scheduler sees a request); a
// sweep 1, 4, 16, 32, 64 (100-token prompts, 64 output tokens) is fitted
// on 1-16 from the same replica without those two terms, and predicts the
// ITL at 32 and 64 within 15%. By hand, the truth's step with 132 tokens
// of context per sequence:
//
//	weights 16e9 B / (3.35e12 x 0.7/3 B/s) = 20.469 ms; per sequence
//	132 x 0.16768 us (KV) + 150 us = 172.1 us
//	step(32) = 20.469 + 32 x 0.1721 = 25.98 ms; step(64) = 31.49 ms
//
// and the fit recovers the request overhead (30 ms, plus about a
// millisecond of loopback HTTP) from TTFTs of 100- and 300-token prompts.
func TestCalibrateHoldsOut(t *testing.T) {
	if testing.Short() {
		t.Skip("about 30 s of load")
	}
	t.Parallel()
	base := replica.DefaultConfig()
	base.BandwidthEfficiency, base.MFU = 0.7/3, 0.4/3
	truth := base
	truth.SequenceStepCost, truth.RequestOverhead = 150*time.Microsecond, 30*time.Millisecond
	tr, err := replica.New(truth)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Start(context.Background(), fleet.Config{Replicas: 1, Max: 1, Replica: tr})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	cfg := Config{URL: f.URL(), PromptTokens: 100, MaxTokens: 64, RampUp: 2 * time.Second, Duration: time.Minute}
	var points []Summary
	for _, c := range []int{1, 4, 16, 32, 64} {
		cfg.Concurrency, cfg.Requests, cfg.Warmup = c, 3*c, c
		if c == 1 {
			cfg.Requests, cfg.Warmup, cfg.RampUp = 4, 0, 0
		} else {
			cfg.RampUp = 2 * time.Second
		}
		recs, dur, err := Run(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := Summarize(recs, dur)
		s.Concurrency = c
		points = append(points, s)
	}
	cal, err := Calibrate(t.Context(), base, cfg, points, 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fitted: efficiency %.4f, overhead %.3f ms, per sequence %.1f us, MFU %.4f, request overhead %.1f ms",
		cal.BandwidthEfficiency, cal.StepOverheadS*1000, cal.SequenceStepCostS*1e6, cal.MFU, cal.RequestOverheadS*1000)
	want := map[int]float64{32: 0.02598, 64: 0.03149}
	if len(cal.HeldOut) != 2 {
		t.Fatalf("held out %+v, want 32 and 64", cal.HeldOut)
	}
	for _, p := range cal.HeldOut {
		t.Logf("held out c=%d: measured %.2f ms, predicted %.2f ms (truth %.2f ms): %+.1f%%", p.Batch, p.StepS*1000, p.PredictedS*1000, want[p.Batch]*1000, 100*p.Error())
		if math.Abs(p.Error()) > 0.15 || math.Abs(p.PredictedS-want[p.Batch]) > 0.15*want[p.Batch] {
			t.Errorf("c=%d: predicted %.2f ms against measured %.2f and the truth's %.2f: beyond 15%%", p.Batch, p.PredictedS*1000, p.StepS*1000, want[p.Batch]*1000)
		}
	}
	if math.Abs(cal.RequestOverheadS-0.030) > 0.15*0.030 {
		t.Errorf("request overhead %.1f ms, want 30 ms within 15%%", cal.RequestOverheadS*1000)
	}
	if math.Abs(cal.MFU-base.MFU) > 0.15*base.MFU {
		t.Errorf("MFU %.4f, want the truth's %.4f within 15%%", cal.MFU, base.MFU)
	}
}
