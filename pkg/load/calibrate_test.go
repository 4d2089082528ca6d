package load

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/fleet"
	"github.com/infscale/infscale/pkg/replica"
)

// TestCalibrateHoldsOut: the fleet runs a replica the default model does
// not describe (the reference ten times slower, plus 500 us per running
// sequence per step and 100 ms before the scheduler sees a request); a
// sweep 1, 4, 16, 32, 64 (50-token prompts, 32 output tokens) is fitted
// on 1-16 from the same replica without those two terms, and predicts the
// ITL at 32 and 64 within 15%. By hand, the truth's step with 66 tokens
// of context per sequence:
//
//	weights 16e9 B / (3.35e12 x 0.07 B/s) = 68.230 ms; per sequence
//	66 x 0.55894 us (KV) + 500 us = 536.89 us
//	step(32) = 68.230 + 32 x 0.53689 = 85.411 ms; step(64) = 102.591 ms
//
// and the fit recovers the request overhead (100 ms, plus about a
// millisecond of loopback HTTP) from TTFTs of 50- and 150-token prompts
// (prefill at MFU 0.04: 20.2 and 60.6 ms).
//
// The timescale is slow on purpose: the ITLs are wall-clock times between
// streamed chunks, and on a loaded machine a goroutine woken tens of
// milliseconds late delivers two steps' tokens at once (an ITL near 0, then
// one near two steps). At 20-31 ms steps such bursts pulled the median ITL
// 20% low once in five runs beside a parallel build; at 68-103 ms steps a
// late wake-up rarely spans a step. Prompt and output lengths keep the
// ratio of prefill to decode work of the 100/64 sweep at the faster scale.
// The test does not run in parallel with the package's other load tests
// for the same reason.
func TestCalibrateHoldsOut(t *testing.T) {
	if testing.Short() {
		t.Skip("about a minute of load")
	}
	base := replica.DefaultConfig()
	base.BandwidthEfficiency, base.MFU = 0.07, 0.04
	truth := base
	truth.SequenceStepCost, truth.RequestOverhead = 500*time.Microsecond, 100*time.Millisecond
	tr, err := replica.New(truth)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Start(context.Background(), fleet.Config{Replicas: 1, Max: 1, Replica: tr})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	cfg := Config{URL: f.URL(), PromptTokens: 50, MaxTokens: 32, RampUp: 2 * time.Second, Duration: time.Minute}
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
	cal, err := Calibrate(t.Context(), base, cfg, points, nil, 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fitted: efficiency %.4f, overhead %.3f ms, per sequence %.1f us, MFU %.4f, request overhead %.1f ms",
		cal.BandwidthEfficiency, cal.StepOverheadS*1000, cal.SequenceStepCostS*1e6, cal.MFU, cal.RequestOverheadS*1000)
	want := map[int]float64{32: 0.085411, 64: 0.102591}
	if len(cal.HeldOut) != 2 {
		t.Fatalf("held out %+v, want 32 and 64", cal.HeldOut)
	}
	for _, p := range cal.HeldOut {
		t.Logf("held out c=%d: measured %.2f ms, predicted %.2f ms (truth %.2f ms): %+.1f%%", p.Batch, p.StepS*1000, p.PredictedS*1000, want[p.Batch]*1000, 100*p.Error())
		if math.Abs(p.Error()) > 0.15 || math.Abs(p.PredictedS-want[p.Batch]) > 0.15*want[p.Batch] {
			t.Errorf("c=%d: predicted %.2f ms against measured %.2f and the truth's %.2f: beyond 15%%", p.Batch, p.PredictedS*1000, p.StepS*1000, want[p.Batch]*1000)
		}
	}
	if math.Abs(cal.RequestOverheadS-0.100) > 0.15*0.100 {
		t.Errorf("request overhead %.1f ms, want 100 ms within 15%%", cal.RequestOverheadS*1000)
	}
	if math.Abs(cal.MFU-base.MFU) > 0.15*base.MFU {
		t.Errorf("MFU %.4f, want the truth's %.4f within 15%%", cal.MFU, base.MFU)
	}
}

// TestCalibrateFitsKV: the fleet runs a replica whose KV cache is read at
// a quarter of its weights' efficiency in this package's slow timescale
// (weights at 0.14 of peak, 34.115 ms a step; the KV at 0.0175, 131072 B
// / (3.35e12 B/s x 0.0175) = 2.2358 us a token; MFU 0.8, so a prompt's
// prefill fits under a step); the fit starts from the same replica without
// the KV's own efficiency (it reads the KV at the weights' 0.14).
// Concurrency 1, 2, 4 and 8 run at 1,000-token prompts and at the default
// second length, KVPromptTokens(1000, 64, 8192) = 2 x 1000 + 32 = 2032,
// each point one round of 64 output tokens that start together, so the
// batch holds at c throughout and a sequence holds prompt + 32 tokens on
// the median step: contexts of 1,032 and 2,064 tokens a sequence, 2x
// apart. The points run at once, each against its own fleet (the sweep's
// 8 points in about 5 s instead of 25).
//
// The truth's steps run from 34.115 + 1032 x 0.0022358 = 36.42 ms (c=1)
// to 34.115 + 8 x 2064 x 0.0022358 = 71.03 ms (c=8). Each point's ITL p50
// is checked within 2% of its truth's step; ±2% on every step moves the
// plane's KV slope by at most 16.4% (0.02 x Σ|wᵢ|·stepᵢ / k, wᵢ the least
// squares weights of the 8 points, worked out by hand), so the fitted KV
// efficiency lies in [0.0175 / 1.164, 0.0175 / 0.836] = [0.01503, 0.02094].
func TestCalibrateFitsKV(t *testing.T) {
	if testing.Short() {
		t.Skip("about 10 s of load")
	}
	base := replica.DefaultConfig()
	base.BandwidthEfficiency, base.MFU = 0.14, 0.8
	truth := base
	truth.KVBandwidthEfficiency = 0.0175
	tr, err := replica.New(truth)
	if err != nil {
		t.Fatal(err)
	}
	const prompt, output = 1000, 64
	second := KVPromptTokens(prompt, output, 8192)
	if second != 2032 {
		t.Fatalf("second prompt length %d, want 2032", second)
	}
	concurrencies := []int{1, 2, 4, 8}
	type run struct {
		prompt, c int
		s         Summary
		err       error
	}
	var runs []*run
	for _, p := range []int{prompt, second} {
		for _, c := range concurrencies {
			runs = append(runs, &run{prompt: p, c: c})
		}
	}
	var fleets []*fleet.Fleet
	for range len(runs) + 1 { // the last serves the prefill probes
		f, err := fleet.Start(context.Background(), fleet.Config{Replicas: 1, Max: 1, Replica: tr})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Stop()
		fleets = append(fleets, f)
	}
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Go(func() {
			cfg := Config{URL: fleets[i].URL(), PromptTokens: r.prompt, MaxTokens: output, Concurrency: r.c, Requests: r.c, Duration: time.Minute, Seed: uint64(i + 1)}
			recs, dur, err := Run(t.Context(), cfg)
			r.s, r.err = Summarize(recs, dur), err
			r.s.Concurrency = r.c
		})
	}
	wg.Wait()
	var points []Summary
	var extra []PromptSweep
	for _, r := range runs {
		if r.err != nil || r.s.Requests != r.c {
			t.Fatalf("c=%d at %d-token prompts: %d requests, %v %s", r.c, r.prompt, r.s.Requests, r.err, r.s.FirstError)
		}
		want := tr.StepTime(r.c, int64(r.c*(r.prompt+output/2)))
		if got := float64(r.s.ITLP50); math.Abs(got-want) > 0.02*want {
			t.Errorf("c=%d at %d-token prompts: ITL p50 %.2f ms, truth's step %.2f ms: beyond 2%%", r.c, r.prompt, got*1000, want*1000)
		} else {
			t.Logf("c=%d at %d-token prompts: ITL p50 %.2f ms, truth's step %.2f ms (%+.2f%%)", r.c, r.prompt, got*1000, want*1000, 100*(got-want)/want)
		}
		if r.prompt == prompt {
			points = append(points, r.s)
		} else if len(extra) == 0 {
			extra = append(extra, PromptSweep{PromptTokens: second, Points: []Summary{r.s}})
		} else {
			extra[0].Points = append(extra[0].Points, r.s)
		}
	}
	cfg := Config{URL: fleets[len(runs)].URL(), PromptTokens: prompt, MaxTokens: output}
	cal, err := Calibrate(t.Context(), base, cfg, points, extra, 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fitted: KV efficiency %.5f (truth 0.0175), efficiency %.4f, overhead %.3f ms, per sequence %.1f us; %s",
		cal.KVBandwidthEfficiency, cal.BandwidthEfficiency, cal.StepOverheadS*1000, cal.SequenceStepCostS*1e6, cal.KVNote)
	if cal.KVBandwidthEfficiency < 0.01503 || cal.KVBandwidthEfficiency > 0.02094 {
		t.Errorf("KV efficiency %.5f: want 0.0175 within [0.01503, 0.02094] (%s)", cal.KVBandwidthEfficiency, cal.KVNote)
	}
	if !strings.Contains(cal.KVNote, "contexts of 1032 to 2064 tokens a sequence (2.00x)") {
		t.Errorf("KV note %q: want the contexts 1032 to 2064 named", cal.KVNote)
	}
}

// TestDecodePointsContext: a point's context per sequence is its prompt
// plus half its output, each per request as the server's usage counts
// them, not half of max_tokens. Sweep at 512-token prompts, max_tokens 128,
// max batch 48, fitted up to 16:
//   - c=4, 10 requests of 5200 prompt and 640 output tokens (520 and 64
//     each: the server stopped at the end of text): 4 x (520 + 64/2) =
//     2208 (it was 4 x (520 + 128/2) = 2336);
//   - c=2 without counts: 2 x (512 + 128/2) = 1152;
//   - c=32, 5 requests of 2560 and 640: held out, 32 x (512 + 64) = 18432;
//   - c=64 is above the max batch and c=8 has no request: left out.
func TestDecodePointsContext(t *testing.T) {
	pts := []Summary{
		{Concurrency: 2, Requests: 3, ITLP50: 0.01},
		{Concurrency: 4, Requests: 10, PromptTokens: 5200, OutputTokens: 640, ITLP50: 0.02},
		{Concurrency: 8, ITLP50: 0.03},
		{Concurrency: 32, Requests: 5, PromptTokens: 2560, OutputTokens: 640, ITLP50: 0.04},
		{Concurrency: 64, Requests: 5, PromptTokens: 2560, OutputTokens: 640, ITLP50: 0.05},
	}
	fit, held := decodePoints([]PromptSweep{{PromptTokens: 512, Points: pts}}, 128, 48, 16)
	want := []replica.StepPoint{{Batch: 2, ContextTokens: 1152, StepS: 0.01}, {Batch: 4, ContextTokens: 2208, StepS: 0.02}}
	if len(fit) != 2 || fit[0] != want[0] || fit[1] != want[1] {
		t.Errorf("fitted %+v, want %+v", fit, want)
	}
	if len(held) != 1 || held[0] != (replica.StepPoint{Batch: 32, ContextTokens: 18432, StepS: 0.04}) {
		t.Errorf("held out %+v, want batch 32 at 18432 tokens", held)
	}
}

// TestCalibrateWarnsOfFailedRequests: a fitted point whose requests partly
// failed (a proxy's 502 for 3 of 10) ran below its concurrency while they
// did, and a prefill probe that failed is one fewer TTFT: the fit still
// runs, but a warning line names the point, the count and the first error
// (the file was written without a word, the only sign the table's errors
// column). A sweep without failures has no such warning.
func TestCalibrateWarnsOfFailedRequests(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Prompt string `json:"prompt"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if n.Add(1) == 3 { // the first measured prefill probe, of 64 tokens (after a warm-up pair)
			http.Error(w, "upstream gone", http.StatusBadGateway)
			return
		}
		// A prefill: longer prompts slower, the 192-token probes 12.8 ms
		// after the 64-token ones, well above a busy machine's jitter.
		time.Sleep(time.Duration(len(strings.Fields(body.Prompt))) * 100 * time.Microsecond)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\n"+
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n", len(strings.Fields(body.Prompt)))
	}))
	defer srv.Close()
	point := func(c, ok, failed int, step float64) Summary {
		s := Summary{Concurrency: c, Requests: ok, Errors: failed, PromptTokens: 64 * ok, OutputTokens: 8 * ok, ITLP50: Float(step)}
		if failed > 0 {
			s.FirstError = "502 Bad Gateway: upstream gone"
		}
		return s
	}
	cfg := Config{URL: srv.URL, Model: "m", PromptTokens: 64, MaxTokens: 8, Duration: time.Minute, Timeout: 5 * time.Second}
	for _, tc := range []struct {
		name   string
		points []Summary
		want   []string
	}{
		{"failures", []Summary{point(1, 10, 0, 0.0070), point(2, 7, 3, 0.0071), point(4, 10, 0, 0.0072)}, []string{
			"points with failed requests, fitted or held out: c=2 at 64-token prompts (3 of 10 failed); the first: 502 Bad Gateway: upstream gone",
			"prefill probes of 64-token prompts: 1 of 16 failed; the first: 502 Bad Gateway: upstream gone"}},
		{"none", []Summary{point(1, 10, 0, 0.0070), point(2, 10, 0, 0.0071)}, nil},
	} {
		n.Store(100) // no probe fails
		if tc.want != nil {
			n.Store(0)
		}
		cal, err := Calibrate(t.Context(), replica.DefaultConfig(), cfg, tc.points, nil, 16)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, w := range cal.Warnings {
			if strings.Contains(w, "failed") {
				got = append(got, w)
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: warnings of failures %q, want %d", tc.name, got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: warning %q, want it to contain %q", tc.name, got[i], w)
			}
		}
	}
}
