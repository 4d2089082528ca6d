package replay

import (
	"math"
	"testing"
)

// linearModel: prefill 1 ms per token, a decode step 10 ms + 1 µs per
// context token, 64 batch slots.
type linearModel struct{}

func (linearModel) StepTime(b int, ctx int64) float64 { return 0.01 + 1e-6*float64(ctx) }
func (linearModel) PrefillTime(tokens int) float64    { return 0.001 * float64(tokens) }
func (linearModel) KVCapacityTokens() int64           { return 1 << 20 }
func (linearModel) MaxBatch() int                     { return 64 }
func (linearModel) ColdStart() float64                { return 60 }
func (linearModel) CPUPercent(int) float64            { return 0 }

// TestPerReplica by hand, prompts of 500 and outputs of 200 tokens:
//   - queue:16 holds 16: context 16 × (500 + 200/2) = 9,600 tokens, a step
//     0.01 + 0.0096 = 0.0196 s; latency 0.5 + 200 × 0.0196 = 4.42 s;
//   - fixed:3 has no target: 0.7 × 64 = 44.8, batch 45, context 27,000, a
//     step 0.037 s; latency 0.5 + 200 × 0.037 = 7.9 s.
func TestPerReplica(t *testing.T) {
	q, err := ParsePolicy("queue:16")
	if err != nil {
		t.Fatal(err)
	}
	conc, lat, how := PerReplica(linearModel{}, q, 500, 200)
	if conc != 16 || math.Abs(lat-4.42) > 1e-9 || how != "queue target 16" {
		t.Errorf("queue:16: %v, %v, %q; want 16, 4.42, queue target 16", conc, lat, how)
	}
	f, err := ParsePolicy("fixed:3")
	if err != nil {
		t.Fatal(err)
	}
	conc, lat, how = PerReplica(linearModel{}, f, 500, 200)
	if math.Abs(conc-44.8) > 1e-9 || math.Abs(lat-7.9) > 1e-9 || how != "70% of max batch 64" {
		t.Errorf("fixed:3: %v, %v, %q; want 44.8, 7.9, 70%% of max batch 64", conc, lat, how)
	}
}
