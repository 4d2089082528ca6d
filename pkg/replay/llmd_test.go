package replay

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/recommend"
)

// TestLLMDSignals: the EPP values the llm-d baselines read, by hand. Two
// ready replicas, 20 running, 14 waiting, KV 0.5: the utilization detector
// holds what is beyond 5 waiting per replica (14 - 10 = 4 in the
// flow-control queue), 20 + 10 = 30 dispatched; saturation max(14 / 2 / 5,
// 0.5 / 0.8) = 1.4. At KV 0.85 every waiting request is held (14; 20
// dispatched). No ready replica: the 3 held are the queue, saturation 1.0.
func TestLLMDSignals(t *testing.T) {
	obs := recommend.Unknown()
	obs.Current, obs.Reporting, obs.Running, obs.Waiting, obs.KV = 2, 2, 20, 14, 0.5
	if f, d := llmdGated(obs); f != 4 || d != 30 {
		t.Errorf("flow, dispatched = %v, %v; want 4, 30", f, d)
	}
	if s := llmdSaturation(obs); math.Abs(s-1.4) > 1e-12 {
		t.Errorf("saturation %v, want 1.4", s)
	}
	obs.KV = 0.85
	if f, d := llmdGated(obs); f != 14 || d != 20 {
		t.Errorf("KV 0.85: flow, dispatched = %v, %v; want 14, 20", f, d)
	}
	empty := recommend.Unknown()
	empty.Held = 3
	if f, d := llmdGated(empty); f != 3 || d != 0 {
		t.Errorf("no replica: flow, dispatched = %v, %v; want 3, 0", f, d)
	}
	if s := llmdSaturation(empty); s != 1 {
		t.Errorf("empty pool saturation %v, want 1 (the router's fail-closed reading)", s)
	}
}

// TestLLMDQueueDecision: llmd-queue at 2 replicas with the observation
// above (KV 0.5), every 15 s: the flow-control trigger asks ceil(4 / 1) = 4,
// the running one ceil(30 / 16) = 2; the HPA would take 4 (within 100 % per
// 15 s), but the guide's 300 s scale-up window (seeded with the current 2,
// as the HPA seeds it) holds 2 until 300 s after the first decision.
func TestLLMDQueueDecision(t *testing.T) {
	p, err := ParsePolicy("llmd-queue")
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := p.build(env{cfg: Config{Epoch: time.Unix(1_800_000_000, 0), SLOTTFT: 2}})
	if err != nil {
		t.Fatal(err)
	}
	obs := recommend.Unknown()
	obs.Current, obs.Reporting, obs.Running, obs.Waiting, obs.KV = 2, 2, 20, 14, 0.5
	first := -1.0
	for now := 15.0; now <= 600; now += 15 {
		if got := ctl.Decide(now, obs); got == 4 {
			first = now
			break
		} else if got != 2 {
			t.Fatalf("t=%v: desired %d, want 2 (held) then 4", now, got)
		}
	}
	if first < 315 || first > 330 {
		t.Errorf("reached 4 at t=%v, want once the 300 s window has passed the first decision (t=315..330)", first)
	}
}

// TestLLMDSLOLaw: the SLO guide's control law at n = 4 provisioned, 4
// ready, SLO 2 s, no running batch (the TPOT term out), one sample each:
//
//	t=0   TTFT 2.2 s: s_raw 1.1, s 1.1 > 0.55: d = 4 + ceil(4 (1.1/0.55 - 1)) = 8
//	t=15  TTFT 0.4 s: s_raw 0.2, s = (1.1 + 0.2)/2 = 0.65: d = 4 + ceil(4 (0.65/0.55 - 1)) = 4 + ceil(0.73) = 5
//	t=60  TTFT 0.4 s: the 45 s window holds t=60 only: s 0.2 < 0.40: d = 4 - floor(4 (1 - 0.5)) = 2
//	with 2 of 4 ready (credit 0.5) and s 1.1: d = 4 + ceil(4 (1.1 x 0.5 / 0.55 - 1)) = 4
//	TTFT 10 s: s_raw 5 clamped to 2: d = 4 + ceil(4 (2/0.55 - 1)) = 4 + 11 = 15
func TestLLMDSLOLaw(t *testing.T) {
	law := llmdSLO(env{cfg: Config{SLOTTFT: 2}})
	obs := recommend.Unknown()
	obs.Current, obs.Reporting, obs.Running = 4, 4, 0
	for _, c := range []struct {
		t, ttft float64
		want    float64
	}{{0, 2.2, 8}, {15, 0.4, 5}, {60, 0.4, 2}} {
		obs.TTFT = c.ttft
		if d, _ := law(c.t, obs); d != c.want {
			t.Errorf("t=%v TTFT %v: d %v, want %v", c.t, c.ttft, d, c.want)
		}
	}
	credit := llmdSLO(env{cfg: Config{SLOTTFT: 2}})
	obs.Reporting, obs.TTFT = 2, 2.2
	if d, _ := credit(0, obs); d != 4 {
		t.Errorf("credit 0.5: d %v, want 4", d)
	}
	clamp := llmdSLO(env{cfg: Config{SLOTTFT: 2}})
	obs.Reporting, obs.TTFT = 4, 10
	if d, _ := clamp(0, obs); d != 15 {
		t.Errorf("clamped: d %v, want 15", d)
	}
}

func TestLLMDParse(t *testing.T) {
	for _, s := range []string{"llmd-queue", "llmd-saturation,max=10", "llmd-tokens,min=2", "llmd-slo"} {
		p, err := ParsePolicy(s)
		if err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		if p.Recommend != nil {
			t.Errorf("%s: a baseline, not an infscale policy", s)
		}
	}
	if p, _ := ParsePolicy("llmd-slo"); p.min != 3 {
		t.Errorf("llmd-slo min %d, want the guide's 3", p.min)
	}
	for s, want := range map[string]string{
		"llmd-foo":              `"llmd-foo": the llm-d baselines are llmd-queue, llmd-saturation, llmd-tokens, llmd-slo`,
		"llmd-queue,upwindow=0": "this baseline takes only min= and max=",
		// min=0 ran as min=1 under the name llmd-slo,min=0: refused at
		// the 0 (8 + 1 + 4 characters before it: column 14; 10 + 1 + 5
		// + 1 + 4 before the second: column 22).
		"llmd-slo,min=0":         `at column 14: llmd-slo: min=0: llm-d's ScaledObjects scale through the HPA, whose minReplicas is at least 1`,
		"llmd-queue,max=4,min=0": "at column 22: llmd-queue: min=0:",
	} {
		if _, err := ParsePolicy(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", s, err, want)
		}
	}
}
