package recommend

import (
	"strings"
	"testing"
)

// TestDemandStepShowsCostPerRequest: the demand step prints the cost per
// request with the capacity's figures it came from, so it recomputes by
// hand (docs/recommend.md, "Demand"). On testCapacity (1000 prefill
// tokens/s, batch 10, 10,000 KV tokens, step 0.01 s + 1e-6 s per context
// token), demand:0.5:
//   - 8 req/s of 100/50 tokens: batch min(10, floor(10000 / 150) = 66) =
//     10; context 10 × (100 + 50/2) = 1250 tokens; step 0.01 + 1e-6 × 1250 =
//     0.01125 s; per request 100 / 1000 + 50 × 0.01125 / 10 = 0.15625 s;
//     8 × 0.15625 = 1.25 busy, / 0.5 = 2.5, ceil 3.
//   - with 75% of the prompt cached: 100 × (1 − 0.75) / 1000 + the same
//     decode = 0.08125 s, 0.65 busy, / 0.5 = 1.3, ceil 2.
//   - 1 req/s of 4000/1000 tokens: the KV cache holds floor(10000 / 5000)
//     = 2 of them, batch 2; context 2 × 4500 = 9000; step 0.01 + 0.009 =
//     0.019 s; per request 4 + 1000 × 0.019 / 2 = 13.5 s; 13.5 busy, / 0.5
//     = 27.
//   - the same 8 req/s with a compute floor of 0.02 s above the line's
//     0.01125: step 0.02, per request 0.1 + 50 × 0.02 / 10 = 0.2 s, 1.6
//     busy, / 0.5 = 3.2, ceil 4.
func TestDemandStepShowsCostPerRequest(t *testing.T) {
	floored := *testCapacity
	floored.StepComputeSeconds = 0.02
	for _, tc := range []struct {
		name               string
		capacity           *Capacity
		rate, pr, out, hit float64
		want               int
		text               string
	}{
		{"line", testCapacity, 8, 100, 50, nan, 3,
			"demand 8 req/s × 0.15625 replica-s per request (prompt 100, output 50 tokens: 100 / 1000 prefill tokens/s + 50 × step 0.01125 s / batch 10; step 0.01 + 0.000001 s × 10 × 125 context tokens) = 1.25 replicas busy / utilisation 0.5 = ceil(2.5) = 3"},
		{"hit", testCapacity, 8, 100, 50, 0.75, 2,
			"demand 8 req/s × 0.08125 replica-s per request (prompt 100, output 50 tokens, prefix cache hit 0.75: 25 prefilled: 100 × (1 − 0.75) / 1000 prefill tokens/s + 50 × step 0.01125 s / batch 10; step 0.01 + 0.000001 s × 10 × 125 context tokens) = 0.65 replicas busy / utilisation 0.5 = ceil(1.3) = 2"},
		{"kv", testCapacity, 1, 4000, 1000, nan, 27,
			"demand 1 req/s × 13.5 replica-s per request (prompt 4000, output 1000 tokens: 4000 / 1000 prefill tokens/s + 1000 × step 0.019 s / batch 2 (KV 10000 tokens / 5000, rounded down, at least 1; max 10); step 0.01 + 0.000001 s × 2 × 4500 context tokens) = 13.5 replicas busy / utilisation 0.5 = 27"},
		{"floor", &floored, 8, 100, 50, nan, 4,
			"(prompt 100, output 50 tokens: 100 / 1000 prefill tokens/s + 50 × step 0.02 s / batch 10; step the compute floor 0.02 s (above 0.01 + 0.000001 s × 10 × 125 context tokens = 0.01125)) = 1.6 replicas busy / utilisation 0.5 = ceil(3.2) = 4"},
	} {
		p := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalDemand, Target: 0.5}}, Min: 1, Max: 50, Capacity: tc.capacity})
		o := demandObs(1, tc.rate)
		o.MeanPrompt, o.MeanOutput, o.PrefixHit = tc.pr, tc.out, tc.hit
		d := Decide(p, o, nil, at(0))
		if d.Raw[0].Replicas != tc.want || !strings.Contains(stepsText(d), tc.text) {
			t.Errorf("%s: raw %d, want %d and a step saying\n  %s\n%s", tc.name, d.Raw[0].Replicas, tc.want, tc.text, stepsText(d))
		}
	}
}
