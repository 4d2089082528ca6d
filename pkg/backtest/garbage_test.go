package backtest

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/promql"
)

// TestReconstructRefusesImplausibleSteps: a success counter that jumps by
// 10^300 in a minute (or to +Inf), or an in-flight gauge that does, would
// draw that many requests into memory (10^9 was enough to be killed). A
// step above MaxArrivalRate (100,000 req/s, 6,000,000 in a minute) is an
// error naming the step; 5 req/s is not.
func TestReconstructRefusesImplausibleSteps(t *testing.T) {
	g := Grid{Start: t0, Step: time.Minute, N: 3}
	for _, c := range []struct {
		name     string
		counter  []Point
		inFlight []float64
	}{
		{"counter jump", pts(0, 0, 60, 300, 120, 1e300, 180, 1e300+300), []float64{0, 0, 0, 0}},
		{"counter +Inf", pts(0, 0, 60, 300, 120, math.Inf(1), 180, 10), []float64{0, 0, 0, 0}},
		{"in-flight jump", pts(0, 0, 60, 300, 120, 600, 180, 900), []float64{0, 0, 1e12, 1e12}},
		{"in-flight +Inf", pts(0, 0, 60, 300, 120, 600, 180, 900), []float64{0, 0, math.Inf(1), 0}},
	} {
		h := History{Grid: g, Success: []Series{{Points: c.counter}}, InFlight: c.inFlight, PromptMean: 100, OutputMean: 50}
		_, err := Reconstruct(h, Options{})
		want := "step 2026-01-05T00:01:00Z..2026-01-05T00:02:00Z"
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "above the 100000 req/s") {
			t.Errorf("%s: err = %v; want the second step named and the bound", c.name, err)
		}
	}
	// 300 per minute (5 req/s) is fine.
	h := History{Grid: g, Success: []Series{{Points: pts(0, 0, 60, 300, 120, 600, 180, 900)}}, InFlight: []float64{0, 0, 0, 0}, PromptMean: 100, OutputMean: 50}
	if w, err := Reconstruct(h, Options{}); err != nil || w.Requests != 900 {
		t.Errorf("5 req/s: %v requests, err %v; want 900", w.Requests, err)
	}
}

// TestReconstructNoCompletions: series that never increase (a flat or
// NaN counter) reconstruct no request: ErrNoTraffic, not an empty trace
// for the replay to complain about.
func TestReconstructNoCompletions(t *testing.T) {
	g := Grid{Start: t0, Step: time.Minute, N: 2}
	nan := math.NaN()
	for name, p := range map[string][]Point{"flat": pts(0, 7, 60, 7, 120, 7), "NaN": pts(0, nan, 60, nan, 120, nan)} {
		h := History{Grid: g, Success: []Series{{Points: p}}, InFlight: []float64{0, 0, 0}, PromptMean: 100, OutputMean: 50}
		if _, err := Reconstruct(h, Options{}); !errors.Is(err, ErrNoTraffic) {
			t.Errorf("%s counter: err = %v, want ErrNoTraffic", name, err)
		}
	}
}

// TestReconstructNoCompletionsMovingGauges: a counter that never
// increases (NaN, flat, -5 throughout) beside in-flight gauges that move
// (0 -> 8 requests) completed nothing: ErrNoTraffic, not a replay of the
// 8 requests the gauges' change alone reconstructs (backtest replayed
// "8 requests" when every sample of the success counter was NaN).
func TestReconstructNoCompletionsMovingGauges(t *testing.T) {
	g := Grid{Start: t0, Step: time.Minute, N: 2}
	nan := math.NaN()
	for name, p := range map[string][]Point{"NaN": pts(0, nan, 60, nan, 120, nan), "flat": pts(0, 7, 60, 7, 120, 7), "negative": pts(0, -5, 60, -5, 120, -5), "+Inf": pts(0, math.Inf(1), 60, math.Inf(1), 120, math.Inf(1))} {
		h := History{Grid: g, Success: []Series{{Points: p}}, InFlight: []float64{0, 4, 8}, PromptMean: 100, OutputMean: 50}
		w, err := Reconstruct(h, Options{})
		if !errors.Is(err, ErrNoTraffic) || !strings.Contains(err.Error(), "none increases") {
			t.Errorf("%s counter, gauges 0 -> 8: %v requests, err = %v; want ErrNoTraffic, none increases", name, w.Requests, err)
		}
	}
	// Completions that are all the requests in flight at the start (10 in
	// flight, 10 complete, 0 after): nothing arrived in the range.
	h := History{Grid: g, Success: []Series{{Points: pts(0, 0, 60, 5, 120, 10)}}, InFlight: []float64{10, 5, 0}, PromptMean: 100, OutputMean: 50}
	if _, err := Reconstruct(h, Options{}); !errors.Is(err, ErrNoTraffic) || !strings.Contains(err.Error(), "10 completions are the requests in flight at the start") {
		t.Errorf("10 completions of 10 in flight: err = %v; want ErrNoTraffic naming the 10", err)
	}
}

// TestHistogramRefusesGarbage: NaN or negative bucket counts and a NaN
// bound are not a histogram (NaN slipped through the monotonicity check).
func TestHistogramRefusesGarbage(t *testing.T) {
	for name, c := range map[string]struct {
		le     []string
		counts []float64
	}{
		"NaN count":      {[]string{"1", "2", "+Inf"}, []float64{10, math.NaN(), 30}},
		"negative count": {[]string{"1", "+Inf"}, []float64{-100, -100}},
		"NaN bound":      {[]string{"NaN", "+Inf"}, []float64{1, 2}},
	} {
		if h, err := NewHistogram(c.le, c.counts); err == nil {
			t.Errorf("%s: got %+v, want an error", name, h)
		}
	}
}

// TestTokensDrawFitsInt32: a mean or a bucket bound past 2^31 tokens draws
// 2^31-1 (rejected by the replay as too large for any KV cache), never a
// negative length from an overflowing conversion.
func TestTokensDrawFitsInt32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	if v := (Tokens{Mean: 1e15}).Draw(rng); v != math.MaxInt32 {
		t.Errorf("mean 1e15: drew %d, want %d", v, math.MaxInt32)
	}
	h, err := NewHistogram([]string{"1e12", "+Inf"}, []float64{0, 10})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if v := (Tokens{Hist: h}).Draw(rng); v != math.MaxInt32 {
			t.Fatalf("bucket (1e12, 2e12]: drew %d, want %d", v, math.MaxInt32)
		}
	}
}

// TestJoinTimestampsRefusesGarbage: timestamp() must give the time of a
// sample at or before its evaluation time; NaN or a time 10^15 s away is
// an error (it broke the JSON report: year outside of range).
func TestJoinTimestampsRefusesGarbage(t *testing.T) {
	ev := model.TimeFromUnix(t0.Unix())
	vals := model.Matrix{{Metric: model.Metric{"pod": "a"}, Values: []model.SamplePair{{Timestamp: ev, Value: 5}}}}
	for _, sec := range []float64{math.NaN(), 1e15, float64(t0.Unix()) + 60, 0} {
		stamps := model.Matrix{{Metric: model.Metric{"pod": "a"}, Values: []model.SamplePair{{Timestamp: ev, Value: model.SampleValue(sec)}}}}
		if _, err := joinTimestamps(vals, stamps); err == nil || !strings.Contains(err.Error(), "want the unix time of a sample at or before 2026-01-05T00:00:00Z") {
			t.Errorf("timestamp %g: err = %v, want one naming the evaluation time", sec, err)
		}
	}
	// 15 s before the evaluation time: a sample within the lookback.
	stamps := model.Matrix{{Metric: model.Metric{"pod": "a"}, Values: []model.SamplePair{{Timestamp: ev, Value: model.SampleValue(float64(t0.Unix()) - 15)}}}}
	if s, err := joinTimestamps(vals, stamps); err != nil || len(s) != 1 || !s[0].Points[0].T.Equal(at(-15)) {
		t.Errorf("a sample 15 s back: %+v, %v", s, err)
	}
}

// TestGridBounded: 60 days at a 1 s step is 5,184,000 steps, above
// MaxSteps (2^22 = 4,194,304); a week at 30 s (20,160 steps) is fine. A
// step below 1 s is refused whatever the range: an hour at 1 ms was
// 3,600,000 steps, under MaxSteps, and held 1.2 GB after a minute of
// range queries.
func TestGridBounded(t *testing.T) {
	if _, err := NewGrid(t0, t0.Add(60*24*time.Hour), time.Second); err == nil || !strings.Contains(err.Error(), "5184000 steps: want at most 4194304") {
		t.Errorf("60 d at 1 s: err = %v", err)
	}
	for _, step := range []time.Duration{time.Millisecond, 999 * time.Millisecond, 0, -time.Second} {
		if _, err := NewGrid(t0, t0.Add(time.Hour), step); err == nil || !strings.Contains(err.Error(), "step "+step.String()+": want at least 1s") {
			t.Errorf("1 h at %s: err = %v; want the step refused", step, err)
		}
	}
	if g, err := NewGrid(t0, t0.Add(7*24*time.Hour), 30*time.Second); err != nil || g.N != 20160 {
		t.Errorf("a week at 30 s: %+v, %v; want 20160 steps", g, err)
	}
}

// TestCoverageWithinRange: a gap that starts at a sample before the range
// (timestamp() looks back) counts only inside the range, so coverage stays
// in 0..1. Range 0..600 s at 60 s; threshold 30 s; samples at -45, 0, 60,
// ..., 600 every 60 s: every spacing (45 s, 60 s) is a gap, the range is
// all gaps: 0, not -0.075 (the 45 s before start counted too).
func TestCoverageWithinRange(t *testing.T) {
	g := Grid{Start: t0, Step: time.Minute, N: 10}
	p := pts(-45, 1)
	for s := 0.0; s <= 600; s += 60 {
		p = append(p, pts(s, 1+s)...)
	}
	cov := coverage(g, []Series{{Points: p}}, 30*time.Second)
	if cov.Fraction != 0 {
		t.Errorf("fraction %v with gaps %v; want 0", cov.Fraction, cov.Gaps)
	}
}

// TestFetchRefusesImplausibleInFlight: a running gauge summing to -50 is
// not a count of requests (it was read as one: its changes became
// arrivals); nor is one at 1e300 or +Inf, above 10^4 replicas x 2^20
// sequences (at 1e300, 1e300 + 600 completions - 1e300 is 0: the error
// blamed the success counter, "none increases"). 10^10 requests is
// inside the bound.
func TestFetchRefusesImplausibleInFlight(t *testing.T) {
	ms, _ := promql.ParseSelector(`{namespace="llm"}`)
	g := Grid{Start: t0, Step: time.Minute, N: 2}
	tgt := Target{Server: modelserver.VLLM, Selector: ms, Replicas: `kube_deployment_spec_replicas`}
	q, err := buildQueries(tgt.Server, ms, 2*time.Minute, tgt.Replicas)
	if err != nil {
		t.Fatal(err)
	}
	at := func(v float64) model.Matrix {
		return model.Matrix{{Metric: model.Metric{}, Values: []model.SamplePair{{Timestamp: model.TimeFromUnix(t0.Unix() + 60), Value: model.SampleValue(v)}}}}
	}
	for _, c := range []struct {
		query string
		v     float64
		want  string
	}{
		{q.Running, -50, "-50"},
		{q.Running, 1e300, "1e+300"},
		{q.Waiting, math.Inf(1), "+Inf"},
	} {
		_, _, err = Fetch(context.Background(), fakeAPI{ranges: map[string]model.Matrix{c.query: at(c.v)}}, tgt, g, nil)
		if want := c.query + " at 2026-01-05T00:01:00Z is " + c.want + ": want requests 0 to 10485760000"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%g: err = %v, want %q", c.v, err, want)
		}
	}
	if _, _, err = Fetch(context.Background(), fakeAPI{ranges: map[string]model.Matrix{q.Running: at(1e10)}}, tgt, g, nil); err != nil && strings.Contains(err.Error(), "want requests") {
		t.Errorf("1e10 in flight refused: %v", err)
	}
}

// TestFetchRefusesImpossibleHourlyTTFT: the hourly TTFT p95 is a
// histogram_quantile, NaN for an hour without requests and otherwise a
// finite number of seconds >= 0; -5 or +Inf was read as observed and the
// fidelity line graded the replay against it ("mean |error| 5.10s ...
// poor"). An error names the query, the hour and the value; NaN stays no
// request.
func TestFetchRefusesImpossibleHourlyTTFT(t *testing.T) {
	ms, _ := promql.ParseSelector(`{namespace="llm"}`)
	g := Grid{Start: t0, Step: time.Minute, N: 120}
	tgt := Target{Server: modelserver.VLLM, Selector: ms, Replicas: `kube_deployment_spec_replicas`}
	q, err := buildQueries(tgt.Server, ms, 2*time.Hour, tgt.Replicas)
	if err != nil {
		t.Fatal(err)
	}
	hour := model.TimeFromUnix(t0.Unix() + 3600)
	for _, c := range []struct {
		v    float64
		want string
	}{{-5, "-5"}, {math.Inf(1), "+Inf"}} {
		m := model.Matrix{{Metric: model.Metric{}, Values: []model.SamplePair{{Timestamp: hour, Value: model.SampleValue(c.v)}}}}
		_, _, err := Fetch(context.Background(), fakeAPI{ranges: map[string]model.Matrix{q.TTFTHourly: m}}, tgt, g, nil)
		if want := q.TTFTHourly + " at 2026-01-05T01:00:00Z is " + c.want + ": want a TTFT quantile in seconds >= 0"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%g: err = %v, want %q", c.v, err, want)
		}
	}
	m := model.Matrix{{Metric: model.Metric{}, Values: []model.SamplePair{{Timestamp: hour, Value: model.SampleValue(math.NaN())}}}}
	h, _, err := Fetch(context.Background(), fakeAPI{ranges: map[string]model.Matrix{q.TTFTHourly: m}}, tgt, g, nil)
	if err != nil || len(h.TTFTHourly) != 1 || !math.IsNaN(h.TTFTHourly[0].V) {
		t.Errorf("NaN hour: %+v, %v; want it kept as no request", h.TTFTHourly, err)
	}
}

// TestFetchWarnsNaNReplicas: a replicas query whose one series is NaN at
// every point (avg over nothing, 0/0) is as good as none: the warning the
// empty answer gets, not a silent "fidelity not available".
func TestFetchWarnsNaNReplicas(t *testing.T) {
	ms, _ := promql.ParseSelector(`{namespace="llm"}`)
	g := Grid{Start: t0, Step: time.Minute, N: 2}
	tgt := Target{Server: modelserver.VLLM, Selector: ms, Replicas: `kube_deployment_spec_replicas`}
	q, err := buildQueries(tgt.Server, ms, 2*time.Minute, tgt.Replicas)
	if err != nil {
		t.Fatal(err)
	}
	nan := model.SampleValue(math.NaN())
	m := model.Matrix{{Metric: model.Metric{}, Values: []model.SamplePair{{Timestamp: model.TimeFromUnix(t0.Unix()), Value: nan}, {Timestamp: model.TimeFromUnix(t0.Unix() + 60), Value: nan}}}}
	_, st, err := Fetch(context.Background(), fakeAPI{ranges: map[string]model.Matrix{q.Replicas: m}}, tgt, g, nil)
	// [0] is the running query's (no sample either: the fake answers none).
	if err != nil || len(st.Warnings) != 2 || !strings.Contains(st.Warnings[1], "replicas query kube_deployment_spec_replicas returned only NaN over 2026-01-05T00:00:00Z..2026-01-05T00:02:00Z: no observed replicas") {
		t.Errorf("warnings %q, err %v; want the NaN replicas said", st.Warnings, err)
	}
}

// TestMaxInFlightIsServes: backtest refuses an in-flight history above the
// bound serve's Prometheus reading refuses a live sum above (one request
// count, one bound: 10,000 x 2^20 = 10,485,760,000).
func TestMaxInFlightIsServes(t *testing.T) {
	if MaxInFlight != 10485760000 || promql.MaxInFlight != 10485760000 {
		t.Errorf("backtest.MaxInFlight %.0f, promql.MaxInFlight %.0f; want both 10485760000", MaxInFlight, promql.MaxInFlight)
	}
}

// TestReconstructBoundsTotal: each step within MaxArrivalRate, the range
// could still reconstruct more requests than any replay should draw (2^22
// steps at 100,000 req/s), refused past MaxReconstructed (2^33,
// 8,589,934,592). By hand: two one-day steps of 5,184,000,000
// completions (60,000 req/s each, within the step bound) total 1.0368e10:
// refused naming the total (ErrTooManyRequests: the caller names its
// range's knob); two of 3,456,000,000 (40,000 req/s) total 6.912e9,
// within the bound; so is a week at 444 req/s (268,531,200), which the
// bound of a synthetic trace (2^28) would have refused.
func TestReconstructBoundsTotal(t *testing.T) {
	const day = 86400
	g := Grid{Start: t0, Step: day * time.Second, N: 2}
	h := History{Grid: g, Success: []Series{{Points: pts(0, 0, day, 5.184e9, 2*day, 1.0368e10)}}, InFlight: []float64{0, 0, 0}, PromptMean: 100, OutputMean: 50}
	_, err := Reconstruct(h, Options{})
	want := "too many requests to replay: the range's reconstructed arrivals total 1.037e+10 requests, more than the 8589934592 (2^33) a replay of history takes (each policy's replay would take an hour or more)"
	if !errors.Is(err, ErrTooManyRequests) || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	h.Success = []Series{{Points: pts(0, 0, day, 3.456e9, 2*day, 6.912e9)}}
	if w, err := Reconstruct(h, Options{}); err != nil || w.Requests != 6.912e9 {
		t.Errorf("6.912e9 requests: %v, err %v; want them reconstructed", w.Requests, err)
	}
	week := Grid{Start: t0, Step: 7 * day * time.Second, N: 1}
	h = History{Grid: week, Success: []Series{{Points: pts(0, 0, 7*day, 444*7*day)}}, InFlight: []float64{0, 0}, PromptMean: 100, OutputMean: 50}
	if w, err := Reconstruct(h, Options{}); err != nil || w.Requests != 444*7*day {
		t.Errorf("a week at 444 req/s: %v, err %v; want it reconstructed", w.Requests, err)
	}
}

// TestReconstructNamesTheMissingLengths: a history with completions but
// without prompt lengths (the incident's fake vLLM pages exported
// vllm:generation_tokens_total and no prompt counter) says the prompt's are
// missing; it said neither the histograms nor the counters had data, the
// generation counter having it. 300 completions a minute, as above.
func TestReconstructNamesTheMissingLengths(t *testing.T) {
	g := Grid{Start: t0, Step: time.Minute, N: 3}
	for _, c := range []struct {
		prompt, output float64
		want           string
	}{
		{0, 50, "no prompt lengths: neither the prompt length histogram nor the prompt token counter has data in the range (the output lengths have"},
		{100, 0, "no output lengths: neither the output length histogram nor the generation token counter has data in the range (the prompt lengths have"},
		{0, 0, "no token lengths: neither the prompt and output length histograms nor the prompt and generation token counters have data"},
	} {
		h := History{Grid: g, Success: []Series{{Points: pts(0, 0, 60, 300, 120, 600, 180, 900)}}, InFlight: []float64{0, 0, 0, 0}, PromptMean: c.prompt, OutputMean: c.output}
		if _, err := Reconstruct(h, Options{}); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("prompt mean %v, output mean %v: err = %v, want %q...", c.prompt, c.output, err, c.want)
		}
	}
}
