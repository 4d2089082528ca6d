package replay

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/trace"
)

// linKV is lin with 100,000 bytes of KV per token: over a 1 GB/s link a
// prompt token's KV moves in 0.1 ms.
type linKV struct{ lin }

func (linKV) KVBytesPerToken() float64 { return 1e5 }

func scriptedPD(p, d int) PDPolicy {
	return PDPolicy{Name: "script", build: func(pdEnv) (pdController, int, int, error) {
		return fixedPair{p, d}, p, d, nil
	}}
}

type fixedPair struct{ p, d int }

func (f fixedPair) decide(float64, recommend.Observation, recommend.Observation) (int, int) {
	return f.p, f.d
}

func TestPDOneRequestByHand(t *testing.T) {
	// One request at 1.0 s, 1000-token prompt, 3 output tokens, on lin
	// (prefill 10,000 tokens/s; step max(0.006 + 1e-7·context, 1e-4·batch)
	// + 0.001 s) with a 1 GB/s KV link:
	//   prefill      1000 / 10,000          = 0.1 s     (KV ready at 1.1)
	//   transfer     1000 × 1e5 B / 1e9 B/s = 0.1 s     (at decode at 1.2)
	//   first step   StepTime(1, 1000) = 0.006 + 1e-4 + 0.001 = 0.0071 s
	//   TTFT         0.1 + 0.1 + 0.0071     = 0.2071 s
	// then 2 steps at contexts 1001 and 1002: 0.0071001 + 0.0071002 s, each
	// an inter-token latency of about 0.0071 s.
	src := trace.FromSlice("one", 30, []trace.Request{{Arrival: 1, Prompt: 1000, Output: 3}})
	res, err := RunPD(context.Background(), src, scriptedPD(1, 1), Config{Model: linKV{}}, PDConfig{KVLinkBytesPerSecond: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 1 || res.Met != 1 || res.Misses() != 0 {
		t.Fatalf("result %+v", res)
	}
	if math.Abs(res.TTFTP50-0.2071)/0.2071 > 0.0025 {
		t.Errorf("TTFT %v, want 0.2071 within the histogram's 0.25%%", res.TTFTP50)
	}
	if math.Abs(res.ITLP95-0.0071)/0.0071 > 0.0025 {
		t.Errorf("ITL p95 %v, want 0.0071", res.ITLP95)
	}
	// One replica in each pool over the 30 s trace.
	if !near(res.Prefill.ReplicaSeconds, 30) || !near(res.Decode.ReplicaSeconds, 30) || !near(res.ReplicaSeconds(), 60) {
		t.Errorf("replica seconds %v + %v, want 30 + 30", res.Prefill.ReplicaSeconds, res.Decode.ReplicaSeconds)
	}
}

func TestPDSlowLinkAddsTransfer(t *testing.T) {
	// The same request over 0.1 GB/s: the transfer is 1 s, TTFT 1.1071 s.
	src := trace.FromSlice("one", 30, []trace.Request{{Arrival: 1, Prompt: 1000, Output: 3}})
	res, err := RunPD(context.Background(), src, scriptedPD(1, 1), Config{Model: linKV{}, MaxBatchedTokens: 1000}, PDConfig{KVLinkBytesPerSecond: 1e8})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(res.TTFTP50-1.1071)/1.1071 > 0.0025 {
		t.Errorf("TTFT %v, want 1.1071", res.TTFTP50)
	}
}

func TestPDDecodeWaitsForKV(t *testing.T) {
	// lin's KV holds 100,000 tokens. Two requests of a 40,000-token
	// prompt and 20,000 output tokens arrive at 0. The prefill replica
	// takes the first alone (the second arrives while it prefills): 4 s
	// each at 10,000 tokens/s, first tokens at 4 and 8 s, KV moved in 4 s
	// (40,000 × 0.1 ms): at the decode replica at 8 and 12 s. The first
	// reserves 60,000 tokens and starts (TTFT 8 + StepTime(1, 40000) =
	// 8.011 s); the second's 60,000 do not fit beside it until it has
	// decoded its 20,000 tokens (over 200 s): late against a 20 s SLO.
	reqs := []trace.Request{{Arrival: 0, Prompt: 40000, Output: 20000}, {Arrival: 0, Prompt: 40000, Output: 20000}}
	src := trace.FromSlice("two", 60, reqs)
	res, err := RunPD(context.Background(), src, scriptedPD(1, 1), Config{Model: linKV{}, MaxBatchedTokens: 100000, SLOTTFT: 20, Drain: 10000}, PDConfig{KVLinkBytesPerSecond: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	if res.Met != 1 || res.Late != 1 {
		t.Errorf("met %d late %d, want 1 and 1 (the second waits for KV room on the decode replica)", res.Met, res.Late)
	}
}

func TestPDOptimalTinyTrace(t *testing.T) {
	// The request of TestPDOneRequestByHand on a 60 s trace, 15 s periods,
	// lin's 60 s cold start (longer than the SLO: no replica can be asked
	// for after the request arrives). Each pool needs one replica at its
	// part of the request (prefill 1.0 to 1.1, decode 1.2 to 1.2213), so
	// it must start warm; the first decision, at 15 s, can release it. No
	// schedule meets the request for less than 15 + 15 = 30
	// replica-seconds, and this one meets it.
	src := trace.FromSlice("one", 60, []trace.Request{{Arrival: 1, Prompt: 1000, Output: 3}})
	pol, err := ParsePDPolicy("optimal")
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunPD(context.Background(), src, pol, Config{Model: linKV{}}, PDConfig{KVLinkBytesPerSecond: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	if res.Misses() != 0 || !near(res.Prefill.ReplicaSeconds, 15) || !near(res.Decode.ReplicaSeconds, 15) {
		t.Errorf("optimal: %d misses, %v + %v replica-seconds; want 0, 15 + 15", res.Misses(), res.Prefill.ReplicaSeconds, res.Decode.ReplicaSeconds)
	}
	if res.LowerBound == nil || res.LowerBound.ReplicaSeconds() > res.ReplicaSeconds()+1e-9 {
		t.Fatalf("bound %+v above the schedule's %v", res.LowerBound, res.ReplicaSeconds())
	}
	// The decode pool's busy-time bound: 3 output tokens at lin's
	// StepTime(128, 0) / 128 = (max(0.006, 0.0128) + 0.001) / 128 s each:
	// 3 × 0.0138 / 128 = 3.234375e-4 replica-seconds (the request finishes
	// decoding by 1 + 2 + 3 × the slowest step, well before 60 s).
	if got := res.LowerBound.DecodeSeconds; math.Abs(got-3.234375e-4) > 1e-12 {
		t.Errorf("decode bound %v, want 3.234375e-4", got)
	}
}

func TestParsePDPolicy(t *testing.T) {
	for _, ok := range []string{"recommended", "optimal", "llmd-queue", "llmd-tokens,max=8", "fixed:2", "pd(queue:24;kv:0.8)", "pd(recommended;fixed:3)",
		"recommended(prefill=0.7,decode=0.9,prefill_min=2)", "recommended(decode_min=100,prefill=0.7,decode=0.9)"} {
		if _, err := ParsePDPolicy(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for spec, want := range map[string]string{
		"pd(queue:24)":         "two policies separated by ';'",
		"pd(optimal;fixed:1)":  "for a pair use optimal alone",
		"knative:16":           "knative",
		"oracle":               "for a pair use optimal alone",
		"pd(queue:24;bogus:1)": "column 13",
		// "pd(queue:8;queue:" is 17 characters: the target at 18.
		"pd(queue:8;queue:16;queue:4)": `at column 18: queue target "16;queue:4": want a number (requests per replica), e.g. 4 (pd(PREFILL;DECODE) takes two policies: the decode policy here runs on past a second ';' into "queue:4")`,
		"llmd-everything":              "llm-d baselines",
		// "recommended(prefill=0.7,decode=0.9," is 12 + 12 + 11 = 35 characters: the floor at 36.
		"recommended(prefill=0.7,decode=0.9,prefill_min=0)":             "at column 36: prefill_min=0: want a floor of 1 to 100 replicas",
		"recommended(prefill=0.7,decode=0.9,decode_min=2.5)":            "decode_min=2.5: want a floor of 1 to 100",
		"recommended(prefill=0.7,decode=0.9,decode_min=101)":            "want a floor of 1 to 100",
		"recommended(prefill=0.7,decode=0.9,decode_min=2,decode_min=3)": "decode_min is given twice",
		"recommended(prefill=0.7,decode=0.9,min=2)":                     `"min=2": want prefill=TARGET, decode=TARGET, prefill_min=N or decode_min=N`,
		"recommended(prefill=0.7,prefill_min=2)":                        "wants both prefill=TARGET and decode=TARGET",
	} {
		if _, err := ParsePDPolicy(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", spec, err, want)
		}
	}
}

// TestPDRecommendedFloors: the pair rule's floors are each pool's least
// replicas and its warm start at least: one request of 1000 tokens warms
// one replica per pool (pdWarmAt: far less than a replica-span of work),
// so floors of 2 and 3 start the pools at 2 and 3, and each pool's policy
// has them as its Min.
func TestPDRecommendedFloors(t *testing.T) {
	e, err := newPDEnv(trace.FromSlice("x", 60, []trace.Request{{Arrival: 1, Prompt: 1000, Output: 10}}), Config{Model: linKV{}}, PDConfig{KVLinkBytesPerSecond: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	for spec, want := range map[string][2]int{
		"recommended(prefill=0.7,decode=0.9)":                            {1, 1},
		"recommended(prefill=0.7,decode=0.9,prefill_min=2,decode_min=3)": {2, 3},
	} {
		p, err := ParsePDPolicy(spec)
		if err != nil {
			t.Fatal(err)
		}
		ctl, ip, id, err := p.build(e)
		if err != nil {
			t.Fatal(err)
		}
		c := ctl.(*pdRecommended)
		if ip != want[0] || id != want[1] || c.p.Prefill.Min != want[0] || c.p.Decode.Min != want[1] {
			t.Errorf("%s: warm %d/%d, min %d/%d; want %v", spec, ip, id, c.p.Prefill.Min, c.p.Decode.Min, want)
		}
	}
}

func TestPDLLMDTokensSplitsTriggers(t *testing.T) {
	// llm-d's P/D overlay: prefill scales on in-flight tokens over V_P,
	// decode on KV usage. On lin over 1 GB/s, V_P = 8192 / (0.8192 s
	// prefill + 0.8192 s transfer + StepTime(1, 8192) = 0.0078192 s) =
	// 4979.2 tokens/s. 10 requests of 1000 tokens in flight at the prefill
	// pool are 10,000 / 4979.2 = 2.008 s of backlog; at the 1.5 threshold:
	// ceil(2.008 / 1.5) = 2 replicas. The decode pool's 0.9 KV usage on 2
	// replicas is 1.8 pods' worth at 0.8: ceil(2.25) = 3.
	p, err := ParsePDPolicy("llmd-tokens")
	if err != nil {
		t.Fatal(err)
	}
	e, err := newPDEnv(trace.FromSlice("x", 60, []trace.Request{{Arrival: 1, Prompt: 1000, Output: 10}}), Config{Model: linKV{}}, PDConfig{KVLinkBytesPerSecond: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	ctl, _, _, err := p.build(e)
	if err != nil {
		t.Fatal(err)
	}
	pc := ctl.(pairCtl)
	pre, dec := pc.pre.(*llmdCtl), pc.dec.(*llmdCtl)
	op := recommend.Observation{Current: 1, Reporting: 1, Running: 4, Waiting: 6, MeanPrompt: 1000, KV: 0.5}
	if a, b := pre.values(15, op); math.Abs(a-10000/(8192/(0.8192+0.8192+0.0078192))) > 1e-9 || b != 0 {
		t.Errorf("prefill triggers %v, %v", a, b)
	}
	od := recommend.Observation{Current: 2, Reporting: 2, Running: 8, KV: 0.9, MeanPrompt: 1000}
	if a, b := dec.values(15, od); a != 0 || math.Abs(b-1.8) > 1e-12 {
		t.Errorf("decode triggers %v, %v", a, b)
	}
}

// pd( and recommended( say what hpa( says of a missing or misplaced
// closing parenthesis, at the column after the text or of what follows
// it; they fell through to the generic "at column 1: want SIGNAL:TARGET".
// A pair's policy given to one pool says so.
func TestParsePDPolicyParentheses(t *testing.T) {
	for spec, want := range map[string]string{
		// "pd(queue:4" is 10 characters: the parenthesis is wanted at 11.
		"pd(queue:4": `policy "pd(queue:4": at column 11: pd( has no closing parenthesis: want pd(PREFILL;DECODE)`,
		// hpa( inside is open too: pd('s parenthesis never closes (24 characters).
		"pd(hpa(queue:4);queue:8": `at column 24: pd( has no closing parenthesis`,
		// ")" is character 19, "x" 20.
		"pd(queue:4;queue:8)x":    `at column 20: "x" after pd(...): nothing follows the closing parenthesis, want pd(PREFILL;DECODE)`,
		"recommended(prefill=0.7": `at column 24: recommended( has no closing parenthesis: want recommended(prefill=TP,decode=TD)`,
		// pd( inside pd(: its first policy starts at column 4.
		"pd(pd(queue:4;queue:8);queue:3)": `at column 4: pd(...) is a prefill/decode pair's policy, not one pool's`,
	} {
		if _, err := ParsePDPolicy(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", spec, err, want)
		}
	}
	if _, err := ParsePDPolicy("pd(hpa(queue:4);queue:8)"); err != nil {
		t.Errorf("pd(hpa(queue:4);queue:8): %v", err)
	}
	want := `policy "pd(queue:4;queue:8)": at column 1: pd(...) is a prefill/decode pair's policy, not one pool's (simulate and backtest read it with --pd)`
	if _, err := ParsePolicy("pd(queue:4;queue:8)"); err == nil || err.Error() != want {
		t.Errorf("ParsePolicy(pd(...)): %v, want %q", err, want)
	}
}

// TestPDPromptFillsKV: lin's KV holds 100,000 tokens. A request of a
// 100,000-token prompt and 0 output tokens fits an aggregated replica
// (prompt + output = 100,000) but a prefill replica reserves prompt + 1 =
// 100,001 (max_tokens=1): it was neither rejected nor admitted, and the
// prefill replica's queue behind it waited for the whole replay (both
// requests unserved). Now it is rejected at arrival (a miss), and the
// request behind it (1,000 + 3 tokens at 2 s) is met.
func TestPDPromptFillsKV(t *testing.T) {
	src := trace.FromSlice("full", 60, []trace.Request{{Arrival: 1, Prompt: 100000, Output: 0}, {Arrival: 2, Prompt: 1000, Output: 3}})
	res, err := RunPD(context.Background(), src, scriptedPD(1, 1), Config{Model: linKV{}, SLOTTFT: 20}, PDConfig{KVLinkBytesPerSecond: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 2 || res.Rejected != 1 || res.Met != 1 {
		t.Errorf("requests %d, rejected %d, met %d: want 2, 1 (the 100,000-token prompt), 1", res.Requests, res.Rejected, res.Met)
	}
}
