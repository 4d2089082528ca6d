package replay

import (
	"context"
	"math"
	"testing"

	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/trace"
)

// script is a test controller: desired replicas by time, and what it saw.
type script struct {
	want func(now float64) int
	seen []recommend.Observation
	at   []float64
}

func (c *script) Decide(now float64, obs recommend.Observation) int {
	c.seen, c.at = append(c.seen, obs), append(c.at, now)
	return c.want(now)
}

func scripted(c *script, initial int) Policy {
	return Policy{Name: "script", min: initial, build: func(env) (Controller, error) { return c, nil }}
}

type event struct {
	t      float64
	first  bool
	prompt int32
	output int32
}

// replayEvents runs reqs under pol with the lin model and records every first
// token and completion.
func replayEvents(t *testing.T, reqs []trace.Request, duration float64, pol Policy, cfg Config) (Result, []event) {
	t.Helper()
	cfg.Model = lin{}
	s, err := newSim(trace.FromSlice("test", duration, reqs), pol, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var evs []event
	s.onFirst = func(now float64, p pending) { evs = append(evs, event{t: now, first: true, prompt: p.prompt}) }
	s.onDone = func(now float64, out int32) { evs = append(evs, event{t: now, output: out}) }
	res, err := s.replay(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res, evs
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestOneRequest(t *testing.T) {
	// lin: prefill 10,000 tokens/s; a step is 0.006 + 1e-7·context + 0.001 s.
	// Arrival at 1.0, 1000 prompt tokens: prefill 0.1 s, first token at 1.1.
	// 3 output tokens: 2 decode steps at context 1001 and 1002:
	// 0.0071001 + 0.0071002 = 0.0142003, done at 1.1142003.
	res, evs := replayEvents(t, []trace.Request{{Arrival: 1, Prompt: 1000, Output: 3}}, 30, scripted(&script{want: func(float64) int { return 1 }}, 1), Config{})
	if len(evs) != 2 || !evs[0].first || !near(evs[0].t, 1.1) || evs[1].first || !near(evs[1].t, 1.1142003) {
		t.Fatalf("events %+v, want first token at 1.1 and done at 1.1142003", evs)
	}
	if res.Met != 1 || res.Requests != 1 || res.OutputTokens != 3 || res.Misses() != 0 {
		t.Errorf("result %+v", res)
	}
	// One replica over the 30 s trace: 30 replica-seconds.
	if !near(res.ReplicaSeconds, 30) {
		t.Errorf("replica seconds %v, want 30", res.ReplicaSeconds)
	}
	if math.Abs(res.TTFTP50-0.1)/0.1 > 0.0025 {
		t.Errorf("TTFT p50 %v, want 0.1 within 0.25%%", res.TTFTP50)
	}
}

func TestArrivalCutsDecodeAtStepBoundary(t *testing.T) {
	// A: arrives 0, 1000 prompt, 101 output: first token at 0.1, then
	// decoding with step i taking 0.0071001 + 1e-7·i s.
	// B: arrives 0.105, 500 prompt, 2 output. Step 0 ends at 0.1071001: the
	// scheduler admits B there.
	reqs := []trace.Request{{Arrival: 0, Prompt: 1000, Output: 101}, {Arrival: 0.105, Prompt: 500, Output: 2}}
	pol := scripted(&script{want: func(float64) int { return 1 }}, 1)
	for _, tc := range []struct {
		mode  PrefillMode
		first float64
	}{
		// Chunked: one step carries A's decode token and B's 500 prompt
		// tokens: max(prefill(501) = 0.0501, decode step 0.0071002) = 0.0501,
		// so B's first token is at 0.1071001 + 0.0501 = 0.1572001.
		{PrefillChunked, 0.1572001},
		// Stall: B's prefill alone, 0.05 s: 0.1571001.
		{PrefillStall, 0.1571001},
	} {
		_, evs := replayEvents(t, reqs, 30, pol, Config{Prefill: tc.mode})
		if len(evs) < 2 || !evs[1].first || evs[1].prompt != 500 || !near(evs[1].t, tc.first) {
			t.Errorf("mode %d: events %+v, want B's first token at %v", tc.mode, evs[:2], tc.first)
		}
	}
}

func TestActivatorColdStartAndAccounting(t *testing.T) {
	// One replica at 0; at the first tick (15 s) the policy asks for 0, so
	// it drains at once (idle) and leaves: 15 replica-seconds. A request at
	// 20 s is held by the activator. At the tick at 30 s the policy sees
	// Held 1 and asks for 1: ready at 30 + 60 (lin's cold start) = 90,
	// prefill 100 tokens = 0.01 s, first token at 90.01: TTFT 70.01 s, a
	// miss. Replica time: 15 s + 30..120 s = 105 s.
	c := &script{want: func(now float64) int {
		if now < 30 {
			return 0
		}
		return 1
	}}
	res, evs := replayEvents(t, []trace.Request{{Arrival: 20, Prompt: 100, Output: 1}}, 120, scripted(c, 1), Config{Initial: 1})
	if len(evs) != 2 || !near(evs[0].t, 90.01) {
		t.Fatalf("events %+v, want the first token at 90.01", evs)
	}
	if res.Late != 1 || res.Misses() != 1 || res.Met != 0 {
		t.Errorf("met %d late %d, want the request late", res.Met, res.Late)
	}
	if !near(res.ReplicaSeconds, 105) {
		t.Errorf("replica seconds %v, want 105", res.ReplicaSeconds)
	}
	// The first observation comes after one period of traffic.
	if c.at[0] != 15 || c.seen[0].Current != 1 || c.seen[0].Reporting != 1 {
		t.Errorf("first observation at %v: %+v, want at 15 s with 1 ready replica", c.at[0], c.seen[0])
	}
	// At 30 s: no replica, the request held; unknown per-replica signals.
	o := c.seen[1]
	if c.at[1] != 30 || o.Current != 0 || o.Held != 1 || !math.IsNaN(o.Running) || !math.IsNaN(o.KV) {
		t.Errorf("observation at %v: %+v, want current 0, held 1, running NaN", c.at[1], o)
	}
	// At 45 s: the replica is starting (unready), it does not report.
	if o := c.seen[2]; o.Current != 1 || o.Reporting != 0 || o.Unready != 1 || !math.IsNaN(o.Waiting) {
		t.Errorf("observation at 45 s: %+v, want current 1, reporting 0, unready 1", o)
	}
	if res.ScaleEvents != 2 || res.Reversals != 1 || res.Peak != 1 {
		t.Errorf("scale events %d reversals %d peak %d, want 2 (1->0->1), 1 reversal, peak 1", res.ScaleEvents, res.Reversals, res.Peak)
	}
}

func TestRemovalOrderAndDraining(t *testing.T) {
	// Two ready replicas. Requests at 1 s and 1.5 s go to replica 0 and 1
	// (fewest outstanding, ties the lowest id); a third at 2 s goes to 0.
	// Each has 1000 prompt tokens and 2001 output tokens (about 14.5 s of
	// decoding). At the tick at 15 s the policy asks for 3 (one starts),
	// at 30 s for 1: the starting replica goes first (cancelled, 15 s of
	// replica time), then the least loaded ready one, replica 1, drains:
	// it keeps serving its request to the end.
	c := &script{want: func(now float64) int {
		switch {
		case now < 15:
			return 2
		case now < 30:
			return 3
		}
		return 1
	}}
	reqs := []trace.Request{{Arrival: 1, Prompt: 1000, Output: 4001}, {Arrival: 1.5, Prompt: 1000, Output: 4001}, {Arrival: 2, Prompt: 1000, Output: 4001}}
	res, evs := replayEvents(t, reqs, 120, scripted(c, 2), Config{Timeline: true})
	done := 0
	for _, e := range evs {
		if !e.first {
			done++
		}
	}
	if done != 3 {
		t.Fatalf("%d requests done, want 3 (draining replicas finish their work): %+v", done, evs)
	}
	// Replica time: replica 0 the whole 120 s; the starting one 15..30 = 15 s;
	// replica 1 from 0 until its request is done (about 1.6 + 0.1 + 4000
	// steps of ~7.2 ms = 30.5 s).
	if res.ReplicaSeconds < 120+15+30 || res.ReplicaSeconds > 120+15+32 {
		t.Errorf("replica seconds %v, want 165..167", res.ReplicaSeconds)
	}
	var at30 Sample
	for _, s := range res.Timeline {
		if s.T == 30 {
			at30 = s
		}
	}
	if at30.Ready != 2 || at30.Starting != 1 || at30.Desired != 1 {
		t.Errorf("timeline at 30 s %+v, want 2 ready and 1 starting before the scale-down to 1", at30)
	}
}

func TestRejectedAndUnserved(t *testing.T) {
	// lin holds 100,000 tokens of KV: a request of 99,000 + 2,000 never
	// fits and is rejected. The policy asks for 0 at 15 s, so a second
	// request at 20 s is held for ever: never a first token, unserved once
	// the drain (30 s after the trace's 30 s) ends.
	reqs := []trace.Request{{Arrival: 1, Prompt: 99000, Output: 2000}, {Arrival: 20, Prompt: 10, Output: 10}}
	res, _ := replayEvents(t, reqs, 30, scripted(&script{want: func(float64) int { return 0 }}, 1), Config{Drain: 30, Initial: 1})
	if res.Rejected != 1 || res.Unserved != 1 || res.Misses() != 2 || res.Requests != 2 {
		t.Errorf("result %+v, want 1 rejected and 1 unserved", res)
	}
	if res.Stop < 30 || res.Stop > 60 {
		t.Errorf("stop %v, want within the 30 s drain after 30 s", res.Stop)
	}
}

func TestObservationSignals(t *testing.T) {
	// One replica, 4 requests of 1000 + 10000 tokens arriving at 1..4 s: at
	// the tick at 15 s all four are decoding (prefill 0.1 s each, decoding
	// 10,000 steps of ~8 ms = 80 s). Running 4, waiting 0; CPU (lin: 30 +
	// 0.25 per running) averaged over 0..15 s; KV = context / 100,000.
	c := &script{want: func(float64) int { return 1 }}
	var reqs []trace.Request
	for i := 1; i <= 4; i++ {
		reqs = append(reqs, trace.Request{Arrival: float64(i), Prompt: 1000, Output: 10000})
	}
	replayEvents(t, reqs, 20, scripted(c, 1), Config{Initial: 1})
	o := c.seen[0]
	if o.Current != 1 || o.Reporting != 1 || o.Running != 4 || o.Waiting != 0 {
		t.Fatalf("observation %+v, want 1 replica, running 4, waiting 0", o)
	}
	// CPU: 0..1.0 idle 5%; 1.0..2.0 one running 30.25%; 2..3 two 30.5%;
	// 3..4 three 30.75%; 4..15 four 31% (prefills take 0.1 s: the count
	// changes at admission). (1×5 + 30.25 + 30.5 + 30.75 + 11×31)/15 = 29.17.
	if math.Abs(o.CPU-29.1667) > 0.05 {
		t.Errorf("CPU %v, want about 29.17", o.CPU)
	}
	// KV: each sequence holds 1001 tokens + one per step since it joined;
	// from 4.1 s to 15 s the batch of 4 runs steps of about 0.0074 s
	// (0.007 + 1e-7 × ~4,500), ~1,470 steps, and the earlier ones ran ~400
	// more between them: about (4 × 1001 + 4 × 1,470 + 400) / 100,000 = 0.103.
	if o.KV < 0.095 || o.KV > 0.11 {
		t.Errorf("KV %v, want about 0.103", o.KV)
	}
	// TTFT: four first tokens, each 0.1 s of prefill plus at most one step:
	// all in vLLM's bucket (0.1, 0.25] (the first is 1.1 - 1.0, a hair above
	// 0.1 in floating point). histogram_quantile(0.95): rank 3.8 of 4 in
	// that bucket, 0.1 + 0.15 × 3.8/4 = 0.2425.
	if math.Abs(o.TTFT-0.2425) > 1e-9 {
		t.Errorf("TTFT %v, want 0.2425 (Prometheus interpolation in vLLM's buckets)", o.TTFT)
	}
}

// The demand signals as rate() and sum/count over the 30 s rate window, by
// hand. Six requests of 1000 + 10 tokens at 1..6 s and one of 3000 + 20 at
// 20 s, one replica of the lin model (prefill 0.1 s per 1000 tokens, steps
// of about 7 ms): each finishes well within its period, none queues.
//
//	t=15  window [0, 15): 6 arrivals / 15 s = 0.4 req/s, 6000 prompt
//	      tokens → 400/s, 60 generated → 4/s, means 1000 and 10
//	t=30  [0, 30): 7/30 req/s, 9000/30 = 300 prompt tokens/s, 80/30
//	      generated/s, means 9000/7 and 80/7
//	t=45  [15, 45): 1/30 req/s, 100/s, means 3000 and 20
//	t=60  [30, 60): nothing: rates 0, the means of the last window with a
//	      finished request (3000, 20)
//
// Queue time is 0 for all (admitted on arrival): the six at t=15 all in
// the first bucket of vLLM's vllm:request_queue_time_seconds, (0, 0.3]:
// rank 0.95 × 6 = 5.7, 0.3 × 5.7/6 = 0.285, as histogram_quantile reads
// it. Before the first finished request the means are unknown.
func TestObservationDemandSignals(t *testing.T) {
	c := &script{want: func(float64) int { return 1 }}
	var reqs []trace.Request
	for i := 1; i <= 6; i++ {
		reqs = append(reqs, trace.Request{Arrival: float64(i), Prompt: 1000, Output: 10})
	}
	reqs = append(reqs, trace.Request{Arrival: 20, Prompt: 3000, Output: 20})
	replayEvents(t, reqs, 61, scripted(c, 1), Config{Initial: 1}) // 61: the tick at 60 comes before the end
	want := []struct{ at, rate, prompt, gen, meanIn, meanOut float64 }{
		{15, 0.4, 400, 4, 1000, 10},
		{30, 7.0 / 30, 300, 80.0 / 30, 9000.0 / 7, 80.0 / 7},
		{45, 1.0 / 30, 100, 20.0 / 30, 3000, 20},
		{60, 0, 0, 0, 3000, 20},
	}
	if len(c.seen) < len(want) {
		t.Fatalf("%d observations, want %d", len(c.seen), len(want))
	}
	for i, w := range want {
		o := c.seen[i]
		if c.at[i] != w.at || !near(o.ArrivalRate, w.rate) || !near(o.PromptTokensRate, w.prompt) || !near(o.GenerationTokensRate, w.gen) ||
			!near(o.MeanPrompt, w.meanIn) || !near(o.MeanOutput, w.meanOut) {
			t.Errorf("t=%v: arrival %v prompt %v/s gen %v/s means %v, %v; want %+v", c.at[i], o.ArrivalRate, o.PromptTokensRate, o.GenerationTokensRate, o.MeanPrompt, o.MeanOutput, w)
		}
	}
	if !near(c.seen[0].QueueTime, 0.285) {
		t.Errorf("queue time p95 %v, want 0.285", c.seen[0].QueueTime)
	}

	// Before any request finishes: lengths unknown, the arrival rate known.
	c = &script{want: func(float64) int { return 1 }}
	replayEvents(t, []trace.Request{{Arrival: 1, Prompt: 1000, Output: 100000}}, 20, scripted(c, 1), Config{Initial: 1})
	if o := c.seen[0]; !near(o.ArrivalRate, 1.0/15) || !math.IsNaN(o.MeanPrompt) || !math.IsNaN(o.MeanOutput) {
		t.Errorf("before the first finish: arrival %v, means %v, %v; want 1/15 and unknown", o.ArrivalRate, o.MeanPrompt, o.MeanOutput)
	}
}
