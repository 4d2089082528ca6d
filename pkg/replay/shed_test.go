package replay

import (
	"context"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/trace"
)

// TestBacklogShed: a policy that never starts a replica (fixed:0) holds
// every request; with the bound lowered to 100, the first 100 of 250
// requests (one every 0.1 s) are held and the 150 arriving from t = 10 s
// (the 101st) are shed: all 250 unserved, all missed, 150 shed, and the
// warning says so. Before, the queue grew with the trace: 35 bytes a
// request, 24 GB in 37 s on a 30-day synthetic trace at 5,000 req/s.
func TestBacklogShed(t *testing.T) {
	src := trace.FromSlice("t", 25, shedTrace(t))
	pol, err := ParsePolicy("fixed:0")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), src, pol, Config{Model: referenceModel(t)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 250 || res.Unserved != 250 || res.Misses() != 250 || res.Shed != 150 || res.FirstShed != 10 {
		t.Errorf("requests %d, unserved %d, misses %d, shed %d from %g s; want 250, 250, 250, 150 from 10 s", res.Requests, res.Unserved, res.Misses(), res.Shed, res.FirstShed)
	}
	if w := res.ShedWarning(); !strings.Contains(w, "100 requests were in the system") || !strings.Contains(w, "from t=10s: 150 later arrivals (60.0% of the trace)") {
		t.Errorf("warning %q: want the bound, the time and the count", w)
	}
}

// TestPDBacklogShedWarned: a P/D pair sheds as a single pool does (each
// pool's replay has the bound), but the pair's run said nothing: its
// misses were counted unserved with no word of the bound. With no
// prefill replica and the bound lowered to 100, the prefill pool holds the
// first 100 of 250 requests (one every 0.1 s) and sheds the 150 arriving
// from t = 10 s (the 101st): one warning, for the prefill pool, naming the
// bound, the time and the share of the pair's 250 requests (60.0%).
func TestPDBacklogShedWarned(t *testing.T) {
	src := trace.FromSlice("t", 25, shedTrace(t))
	res, err := RunPD(context.Background(), src, scriptedPD(0, 1), Config{Model: linKV{}}, PDConfig{KVLinkBytesPerSecond: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 250 || res.Unserved != 250 {
		t.Fatalf("requests %d, unserved %d; want 250, 250", res.Requests, res.Unserved)
	}
	ws := res.ShedWarnings()
	if len(ws) != 1 || !strings.Contains(ws[0], "script (prefill): 100 requests were in the system") || !strings.Contains(ws[0], "from t=10s: 150 later arrivals (60.0% of the trace)") {
		t.Errorf("warnings %q: want one, the prefill pool's, with the bound, the time and the count", ws)
	}
}

// TestScheduleMissesCountShed: optimal's repair adds replicas in the
// periods its schedule's misses arrived in (scheduleResult.missPer, "late
// and unserved requests by arrival period"); a request shed at the backlog
// bound is unserved and was in the total but in no period. With no replica
// and the bound lowered to 100, all 250 requests (one every 0.1 s) are
// unserved: 150 arrived in the first 15 s period, 100 in the second, the
// last 150 of them shed.
func TestScheduleMissesCountShed(t *testing.T) {
	reqs := shedTrace(t)
	cfg := Config{Model: referenceModel(t), Period: 15}.Defaults()
	sp, err := newSpeed(cfg.Model)
	if err != nil {
		t.Fatal(err)
	}
	e := env{cfg: cfg, sp: sp, src: trace.FromSlice("t", 25, reqs)}
	res, err := replayCtl(context.Background(), e, &optimalCtl{period: 15, d: make([]int, 4)}, 0, func(float64) {})
	if err != nil {
		t.Fatal(err)
	}
	if res.misses != 250 || len(res.missPer) != 2 || res.missPer[0] != 150 || res.missPer[1] != 100 {
		t.Errorf("misses %d by period %v; want 250 as [150 100]", res.misses, res.missPer)
	}
}

// shedTrace lowers the backlog bound to 100 for the test and returns its
// 250 requests, one every 0.1 s from 0 (320 prompt, 256 output tokens).
func shedTrace(t *testing.T) []trace.Request {
	m := MaxBacklog
	t.Cleanup(func() { MaxBacklog = m })
	MaxBacklog = 100
	reqs := make([]trace.Request, 250)
	for i := range reqs {
		reqs[i] = trace.Request{Arrival: float64(i) / 10, Prompt: 320, Output: 256}
	}
	return reqs
}
