package backtest

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/replica"
)

// TestRunPairWarnsUnmeetableSLO: a P/D backtest reaches the
// unmeetable-SLO warning when its history's prompts are long. A pair
// replays at all only above the allowance the prefill pool leaves
// (replay.ErrPDSLO: an 8192-token prompt's KV over 25 GB/s, 8192 ×
// 131072 / 25e9 = 42.9 ms, and a full decode step, about 29 ms on the
// reference replica: about 72 ms); a history whose prompts draw from 1
// token (synth-week's lowest bucket) has an idle TTFT of about 7 ms, far
// below it, so no SLO a pair replays can be unmeetable there. A history
// of 2000-token prompts (a prompt counter alone: every prompt its mean)
// is: prefill 2000 / 24750 = 80.81 ms, KV 2000 × 131072 / 25e9 =
// 10.49 ms, a decode step of it alone 16 GB / (3.35 TB/s × 0.7) = 6.823
// ms of weights plus 2000 × 131072 B / 2.345 TB/s = 0.112 ms of KV: 98.2
// ms. --slo-ttft 90ms is warned of, through idle pools, in the report's
// warning lines and JSON; 110ms is not.
func TestRunPairWarnsUnmeetableSLO(t *testing.T) {
	m, err := replica.New(replica.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	pol, err := replay.ParsePDPolicy("pd(fixed:1;fixed:1)")
	if err != nil {
		t.Fatal(err)
	}
	g := Grid{Start: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), Step: time.Minute, N: 10}
	arr := make([]float64, g.N+1)
	for j := 1; j <= g.N; j++ {
		arr[j] = 6 // 0.1 req/s
	}
	w := PairWorkload{Workload: Workload{Grid: g, Arrivals: arr, Requests: 60, Prompt: Tokens{Mean: 2000}, Output: Tokens{Mean: 10}}}
	least := 2000.0/24750 + 2000*131072/25e9 + 16e9/(3.35e12*0.7) + 2000*131072/(3.35e12*0.7)
	for _, c := range []struct {
		slo  float64
		warn bool
	}{{0.09, true}, {0.11, false}} {
		rep, err := RunPair(context.Background(), w, PairConfig{Policies: []replay.PDPolicy{pol},
			PD: replay.PDConfig{KVLinkBytesPerSecond: 25e9}, Replay: replay.Config{Model: m, SLOTTFT: c.slo}})
		if err != nil {
			t.Fatalf("SLO %g: %v", c.slo, err)
		}
		r := rep.Policies[0]
		if r.ShortestPrompt != 2000 || math.Abs(r.IdleTTFT-least) > 1e-3*least {
			t.Errorf("shortest prompt %d, idle TTFT %.5f s; want 2000, %.5f s", r.ShortestPrompt, r.IdleTTFT, least)
		}
		got := rep.SLOWarning()
		if (got != "") != c.warn || (c.warn && !strings.Contains(got, "through idle prefill and decode pools is 0.0982")) {
			t.Errorf("SLO %g: warns %q; want a warning %v, through idle pools at 0.0982 s", c.slo, got, c.warn)
		}
		var b bytes.Buffer
		if err := rep.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if c.warn && !strings.Contains(b.String(), got+"\n") {
			t.Errorf("SLO %g: text lacks the warning %q:\n%s", c.slo, got, b.String())
		}
		b.Reset()
		if err := rep.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		var out struct{ Warnings []string }
		if err := json.Unmarshal(b.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		if c.warn && !slices.Contains(out.Warnings, got) {
			t.Errorf("SLO %g: JSON warnings %q; want %q", c.slo, out.Warnings, got)
		}
	}
}
