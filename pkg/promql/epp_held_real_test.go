package promql

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/epptest"
	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/modelserver"
)

// TestRealEPPHeldCollectedLookback reads, through a real Prometheus, the
// held count of EPPs whose router collects idle flows (deleting their
// queue series, keeping the saturation), with a 4 s FlowQueueLookback:
//
// cur: one flow holds 2 (held 2); collected, 0 (a queue series 1 s ago);
// once the last queue sample is more than 4 s old, unknown (held empty,
// the error wrapping ErrFlowQueueGone and naming the 4s lookback): a pool idle that long is at zero
// already, and its next request writes the series again.
//
// old: an older router (the deprecated names only), collected the same
// way: 2, then 0.
//
// other: ready endpoints of pool p, the saturation of pool code (another
// pool's EPP under the selector) and no flow: the 0 held would be code's.
// pool_series counts the saturation's pool beside the gauges' (2): held
// is unknown, ambiguous, naming both pools.
//
// off: an EPP with flow control off (its ready endpoints, no queue, no
// saturation): held unknown, empty, the error not ErrFlowQueueGone (no
// saturation: nothing shows the queue family is scraped) and naming the
// feature gate.
func TestRealEPPHeldCollectedLookback(t *testing.T) {
	st := func(twins bool) epptest.State {
		return epptest.State{Pool: "p", Model: "m", Flows: []epptest.Flow{{FairnessID: "a", Priority: "0", Held: 2}},
			Saturation: map[string]float64{"effective": 0}, Endpoints: []epptest.Endpoint{{Name: "p-0", Fresh: true}}, OnlyTwins: twins}
	}
	cur, old := epptest.Serve(st(false)), epptest.Serve(st(true))
	defer cur.Close()
	defer old.Close()
	off := epptest.Serve(epptest.State{Pool: "p", Model: "m", Endpoints: []epptest.Endpoint{{Name: "p-0", Fresh: true}}})
	defer off.Close()
	other := fakePod(t, "# TYPE llm_d_epp_ready_endpoints gauge\nllm_d_epp_ready_endpoints{name=\"p\"} 1\n"+
		"# TYPE llm_d_epp_flow_control_pool_saturation gauge\nllm_d_epp_flow_control_pool_saturation{inference_pool=\"code\",stage=\"effective\"} 0\n", false)
	target := func(url, service string) promtest.Target {
		return promtest.Target{URL: url + "/metrics", Labels: map[string]string{"namespace": "llm", "service": service}}
	}
	prom := promtest.Start(t, promtest.Options{ScrapeInterval: time.Second, Targets: []promtest.Target{
		target(cur.URL, "cur-epp"), target(old.URL, "old-epp"), target(other.URL, "other-epp"), target(off.URL, "off-epp")}})
	prom.WaitFor(t, `count(up{namespace="llm"} == 1)`, 30*time.Second, func(v model.Vector) bool { return len(v) == 1 && v[0].Value == 4 })
	c, err := NewClient(ClientConfig{URL: prom.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var tgs []Target
	for _, name := range []string{"cur", "old", "other", "off"} {
		tg := sel(t, `{namespace="llm",service="`+name+`-epp"}`)
		tg.Name, tg.Server, tg.FlowControlHeld, tg.FlowQueueLookback = name, modelserver.EPP, true, 4*time.Second
		tgs = append(tgs, tg)
	}
	ev := &Evaluator{API: c}
	held := func() []Result {
		res, _ := ev.Evaluate(context.Background(), tgs, time.Now())
		return res
	}
	res := held()
	for i, name := range []string{"cur", "old"} {
		if v := res[i].Values[Held]; v != 2 || res[i].Errors[Held] != nil {
			t.Errorf("%s, one flow holding 2: held %v (%v), want 2", name, v, res[i].Errors[Held])
		}
	}
	if err := res[2].Errors[Held]; !math.IsNaN(res[2].Values[Held]) || ReasonOf(err) != ReasonAmbiguous || !strings.Contains(err.Error(), `InferencePool "code"`) || !strings.Contains(err.Error(), `of "p"`) {
		t.Errorf("other: held %v (%v), want unknown, ambiguous, naming pools code and p", res[2].Values[Held], err)
	}
	if err := res[3].Errors[Held]; !math.IsNaN(res[3].Values[Held]) || ReasonOf(err) != ReasonEmpty || errors.Is(err, ErrFlowQueueGone) || !strings.Contains(err.Error(), "is the flowControl feature gate on") {
		t.Errorf("off, no saturation: held %v (%v), want unknown, empty, not ErrFlowQueueGone, naming the feature gate", res[3].Values[Held], err)
	}

	for _, e := range []*epptest.Server{cur, old} {
		e.Set(func(s *epptest.State) { s.Flows = []epptest.Flow{} })
	}
	prom.WaitFor(t, `count({__name__=~".*flow_control_queue_size",namespace="llm"}) or vector(0)`, 30*time.Second, func(v model.Vector) bool { return len(v) == 1 && v[0].Value == 0 })
	res = held()
	for i, name := range []string{"cur", "old"} {
		if v := res[i].Values[Held]; v != 0 || res[i].Errors[Held] != nil {
			t.Errorf("%s, the flow collected: held %v (%v), want 0", name, v, res[i].Errors[Held])
		}
	}

	// Past the lookback: unknown, said.
	deadline := time.Now().Add(20 * time.Second)
	for {
		res = held()
		if math.IsNaN(res[0].Values[Held]) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	// The saturation is there without a queue series: the error wraps
	// ErrFlowQueueGone (serve's carry at zero tells it by that).
	if err := res[0].Errors[Held]; !math.IsNaN(res[0].Values[Held]) || ReasonOf(err) != ReasonEmpty || !errors.Is(err, ErrFlowQueueGone) || !strings.Contains(err.Error(), "now or in the last 4s") {
		t.Errorf("cur, past the 4s lookback: held %v (%v), want unknown, empty, ErrFlowQueueGone, naming the 4s lookback", res[0].Values[Held], err)
	}
}
