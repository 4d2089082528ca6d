package backtest

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/infscale/infscale/pkg/replay"
)

// TestReportSLOWarning: a backtest's report (and a pair's) carries
// replay.SLOWarning of its replays in its warning lines and its JSON
// warnings. A 1-token prompt prefills on the reference replica in 1 /
// 24750 s = 40.4 us; on a pair its KV crosses 25 GB/s in 131072 / 25e9 s
// = 5.2 us and a decode step follows (set to 7 ms here): 7.045 ms. An SLO
// of 10 us is below the first, 5 ms below the second, 10 ms neither.
func TestReportSLOWarning(t *testing.T) {
	agg := replay.Result{Trace: "h", ShortestPrompt: 1, IdleTTFT: 1.0 / 24750}
	pair := replay.PDResult{Trace: "h", ShortestPrompt: 1, IdleTTFT: 1.0/24750 + 131072/25e9 + 0.007}
	for _, c := range []struct {
		slo         float64
		agg, paired bool
	}{{1e-5, true, true}, {5e-3, false, true}, {1e-2, false, false}} {
		rep := Report{SLOTTFT: c.slo, Policies: []Row{{Result: agg, SavingsPct: math.NaN()}}}
		want := replay.SLOWarning("h", c.slo, 1, agg.IdleTTFT, false)
		if got := rep.SLOWarning(); got != want || (got != "") != c.agg {
			t.Errorf("SLO %g: report warns %q; want %q", c.slo, got, want)
		}
		var b bytes.Buffer
		if err := rep.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		var out struct{ Warnings []string }
		if err := json.Unmarshal(b.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(out.Warnings, want) != c.agg {
			t.Errorf("SLO %g: JSON warnings %q; want %q among them: %v", c.slo, out.Warnings, want, c.agg)
		}
		prep := PairReport{SLOTTFT: c.slo, Policies: []PairRow{{PDResult: pair, SavingsPct: math.NaN()}}}
		pwant := pair.SLOWarning(c.slo) // said of idle pools (replay.PDResult.SLOWarning)
		if got := prep.SLOWarning(); got != pwant || (got != "") != c.paired {
			t.Errorf("SLO %g: pair report warns %q; want %q", c.slo, got, pwant)
		}
		b.Reset()
		if err := prep.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		out.Warnings = nil
		if err := json.Unmarshal(b.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(out.Warnings, pwant) != c.paired {
			t.Errorf("SLO %g: pair JSON warnings %q; want %q among them: %v", c.slo, out.Warnings, pwant, c.paired)
		}
	}
}
