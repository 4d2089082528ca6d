package backtest

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestActualMissBounds: vLLM's TTFT buckets around a 2 s SLO, 100 requests:
// 60 within 1 s, 90 within 2.5 s. The linear split of (1, 2.5] puts 60 +
// 30 × (2 − 1) / 1.5 = 80 at or below 2 s: 20% miss; the buckets prove
// only the 10 above 2.5 s late (10%) and allow all but the 60 within 1 s
// (40%). The report says the 20% is a guess between the two; at a 2.5 s
// SLO (a bucket bound) all three are 10% and it says nothing.
func TestActualMissBounds(t *testing.T) {
	h, err := NewHistogram([]string{"1", "2.5", "+Inf"}, []float64{60, 90, 100})
	if err != nil {
		t.Fatal(err)
	}
	got := []float64{100 * h.FractionAbove(2), 100 * h.FractionAboveEdge(2), 100 * h.FractionAboveAtMost(2)}
	for i, want := range []float64{20, 10, 40} {
		if math.Abs(got[i]-want) > 1e-9 {
			t.Fatalf("miss %% (linear, low, high) = %v, want 20, 10, 40", got)
		}
	}
	nan := math.NaN()
	rep := Report{SLOTTFT: 2, Requests: 100, Actual: Actual{ReplicaMinutes: nan, Peak: nan, TTFTP95: 2.3, MissPct: 20, MissPctLow: 10, MissPctHigh: 40}}
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if want := "actual (observed) miss %: 20.0% splits the TTFT bucket holding the 2s SLO linearly; the buckets bound it between 10.0% and 40.0%"; !strings.Contains(b.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, b.String())
	}
	b.Reset()
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Actual struct {
			Low  float64 `json:"miss_pct_low"`
			High float64 `json:"miss_pct_high"`
		} `json:"actual"`
	}
	if err := json.Unmarshal(b.Bytes(), &out); err != nil || out.Actual.Low != 10 || out.Actual.High != 40 {
		t.Errorf("json actual %+v (%v), want miss_pct_low 10, miss_pct_high 40", out.Actual, err)
	}
	rep.Actual.MissPct, rep.Actual.MissPctLow, rep.Actual.MissPctHigh = 10, 10, 10
	b.Reset()
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "splits the TTFT bucket") {
		t.Errorf("an SLO at a bucket bound: the text still explains a split:\n%s", b.String())
	}
}
