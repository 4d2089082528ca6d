package replay

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/infscale/infscale/pkg/trace"
)

// TestSLOWarning: the rule alone. The reference replica prefills 24,750
// tokens/s with no request overhead, so a 100-token prompt has its first
// token 100 / 24750 = 4.04 ms after arriving on an idle replica: an SLO
// of 1 ms is missed by every request, 5 ms and 4.04 ms exactly (within
// the SLO) are not warned of, nor a trace of which no request fits (0).
func TestSLOWarning(t *testing.T) {
	idle := 100.0 / 24750
	for _, c := range []struct {
		slo    float64
		prompt int32
		idle   float64
		want   string
	}{
		{0.001, 100, idle, "t.csv: no request can meet the SLO TTFT of 0.001s: the least TTFT a request has on an idle replica is 0.00404s (its shortest prompt, 100 tokens, alone); every policy misses every request (optimal, the cheapest schedule with the fewest misses, runs no replica). Raise --slo-ttft above 0.00404s, or replay a faster replica (--gpu, --tp)"},
		{0.005, 100, idle, ""},
		{idle, 100, idle, ""},
		{0.001, 0, 0, ""},
		// 1 / 24750 s = 40.4 us: one token, not "1 tokens".
		{1e-5, 1, 1.0 / 24750, "t.csv: no request can meet the SLO TTFT of 1e-05s: the least TTFT a request has on an idle replica is 4.04e-05s (its shortest prompt, 1 token, alone); every policy misses every request (optimal, the cheapest schedule with the fewest misses, runs no replica). Raise --slo-ttft above 4.04e-05s, or replay a faster replica (--gpu, --tp)"},
	} {
		if got := SLOWarning("t.csv", c.slo, c.prompt, c.idle, false); got != c.want {
			t.Errorf("SLOWarning(slo %g, prompt %d, idle %g) = %q\nwant %q", c.slo, c.prompt, c.idle, got, c.want)
		}
	}
}

// TestIdleTTFT: the least TTFT each replay reports is the one a request
// has alone. Aggregated: the shortest prompt, 100 tokens, prefills in
// 100 / 24750 = 4.04 ms. P/D over 25 GB/s at 128 KiB of KV per token
// (llama-3-8b fp16): a 4000-token prompt prefills in 4000 / 24750 =
// 161.6 ms, its KV crosses in 4000 × 131072 / 25e9 = 20.97 ms, and the
// decode step of it alone is the replica model's StepTime(1, 4000) (about
// 7 ms; `infscale gpu`: 6.9 ms at a 1000-token context). A single request
// on a warm pair has exactly that TTFT (the quantile within 0.25%).
func TestIdleTTFT(t *testing.T) {
	m := referenceModel(t)
	src := func(rows string) trace.Source {
		p := filepath.Join(t.TempDir(), "t.csv")
		if err := os.WriteFile(p, []byte(rows), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := trace.ParseContext(context.Background(), p, trace.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	pol, err := ParsePolicy("fixed:1")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), src("0,400,10\n1.5,100,10\n"), pol, Config{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	if want := 100.0 / 24750; r.ShortestPrompt != 100 || math.Abs(r.IdleTTFT-want) > 1e-12 {
		t.Errorf("aggregated: shortest prompt %d, idle TTFT %g s; want 100, %g s", r.ShortestPrompt, r.IdleTTFT, want)
	}

	pd, err := ParsePDPolicy("pd(fixed:1;fixed:1)")
	if err != nil {
		t.Fatal(err)
	}
	pr, err := RunPD(context.Background(), src("0,4000,10\n"), pd, Config{Model: m}, PDConfig{KVLinkBytesPerSecond: 25e9})
	if err != nil {
		t.Fatal(err)
	}
	want := 4000.0/24750 + 4000*131072/25e9 + m.StepTime(1, 4000)
	if pr.ShortestPrompt != 4000 || math.Abs(pr.IdleTTFT-want) > 1e-9 {
		t.Errorf("P/D: shortest prompt %d, idle TTFT %.6f s; want 4000, %.6f s", pr.ShortestPrompt, pr.IdleTTFT, want)
	}
	if math.Abs(pr.TTFTP50-pr.IdleTTFT) > 0.0025*pr.IdleTTFT {
		t.Errorf("P/D: the lone request's TTFT %.6f s, the idle TTFT %.6f s; want them equal", pr.TTFTP50, pr.IdleTTFT)
	}
	if w := pr.SLOWarning(0.15); w == "" {
		t.Errorf("P/D: an SLO of 150 ms, under the prefill and transfer alone (182.6 ms): no warning")
	}
}
