package promql

import (
	"context"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/modelserver"
)

// TestRealEPPPoolSeries scrapes three Endpoint Pickers' pages with a real
// Prometheus and reads them in one batched Evaluate, as embedded mode's
// page check (pkg/scrape's checkPools) refuses the first two.
//
// doubled: 2 ready endpoints, the running average written twice, shard
// "a" 12 and shard "b" 30. The product per series matches no ready series
// (the shard label), so the maxima were multiplied: round(30 x 2) = 60
// running, where the pool's is 24 or 60. Now every signal is unknown, the
// error naming the target, the family and the label shard.
//
// flows: 3 ready averaging 4 running (12), its flow-control queue naming
// pools chat (3 held) and code (2): held read 3 + 2 = 5. Now held is
// unknown, naming both pools; running stays 4 x 3 = 12.
//
// other: the pool gauges of pool p, its flows of pool code (2 held): an
// EPP writes its one pool on both, so code's held requests were read as
// p's. Now held is unknown, naming both pools; running stays 12.
//
// good: two EPP replicas of one pool (pods good-epp-1 and -2), each 4
// ready averaging 2.5 (10 running) and holding 1 and 2 of pool p: one
// series of each gauge per page, held 1 + 2 = 3, nothing refused.
func TestRealEPPPoolSeries(t *testing.T) {
	page := func(ready, running string, extra string) string {
		return "# TYPE llm_d_epp_ready_endpoints gauge\n" + ready +
			"# TYPE llm_d_epp_average_running_requests gauge\n" + running +
			"# TYPE llm_d_epp_average_queue_size gauge\nllm_d_epp_average_queue_size{name=\"p\"} 0\n" +
			"# TYPE llm_d_epp_average_kv_cache_utilization gauge\nllm_d_epp_average_kv_cache_utilization{name=\"p\"} 0.5\n" + extra
	}
	doubled := fakePod(t, page(`llm_d_epp_ready_endpoints{name="p"} 2
`, `llm_d_epp_average_running_requests{name="p",shard="a"} 12
llm_d_epp_average_running_requests{name="p",shard="b"} 30
`, ""), false)
	flows := fakePod(t, page(`llm_d_epp_ready_endpoints{name="p"} 3
`, `llm_d_epp_average_running_requests{name="p"} 4
`, `# TYPE llm_d_epp_flow_control_queue_size gauge
llm_d_epp_flow_control_queue_size{inference_pool="chat",fairness_id="a",priority="0"} 3
llm_d_epp_flow_control_queue_size{inference_pool="code",fairness_id="b",priority="0"} 2
`), false)
	other := fakePod(t, page(`llm_d_epp_ready_endpoints{name="p"} 3
`, `llm_d_epp_average_running_requests{name="p"} 4
`, `# TYPE llm_d_epp_flow_control_queue_size gauge
llm_d_epp_flow_control_queue_size{inference_pool="code",fairness_id="b",priority="0"} 2
`), false)
	goodPage := func(held string) string {
		return page(`llm_d_epp_ready_endpoints{name="p"} 4
`, `llm_d_epp_average_running_requests{name="p"} 2.5
`, `# TYPE llm_d_epp_flow_control_queue_size gauge
llm_d_epp_flow_control_queue_size{inference_pool="p",fairness_id="a",priority="0"} `+held+"\n")
	}
	good1, good2 := fakePod(t, goodPage("1"), false), fakePod(t, goodPage("2"), false)
	target := func(url, service, pod string) promtest.Target {
		return promtest.Target{URL: url + "/metrics", Labels: map[string]string{"namespace": "llm", "service": service, "pod": pod}}
	}
	prom := promtest.Start(t, promtest.Options{ScrapeInterval: time.Second, Targets: []promtest.Target{
		target(doubled.URL, "doubled-epp", "doubled-epp-1"), target(flows.URL, "flows-epp", "flows-epp-1"),
		target(good1.URL, "good-epp", "good-epp-1"), target(good2.URL, "good-epp", "good-epp-2"),
		target(other.URL, "other-epp", "other-epp-1"),
	}})
	prom.WaitFor(t, `count(up{namespace="llm"} == 1)`, 30*time.Second, func(v model.Vector) bool { return len(v) == 1 && v[0].Value == 5 })
	c, err := NewClient(ClientConfig{URL: prom.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var tgs []Target
	for _, name := range []string{"doubled", "flows", "good", "other"} {
		tg := sel(t, `{namespace="llm",service="`+name+`-epp"}`)
		tg.Name, tg.Server, tg.FlowControlHeld = name, modelserver.EPP, true
		tgs = append(tgs, tg)
	}
	ev := &Evaluator{API: c}
	res, st := ev.Evaluate(context.Background(), tgs, time.Now())

	d := res[0]
	for _, s := range []Signal{Running, Waiting, Reporting, KV, Current, Held} {
		err := d.Errors[s]
		if !math.IsNaN(d.Values[s]) || ReasonOf(err) != ReasonAmbiguous {
			t.Errorf("doubled %s %v (%v): want unknown, ambiguous", s, d.Values[s], err)
			continue
		}
		for _, w := range []string{`target "doubled"`, "llm_d_epp_average_running_requests has two series", `shard ("a", "b")`, `pod="doubled-epp-1"`} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("doubled %s error %q: want it to say %s", s, err, w)
			}
		}
	}
	t.Logf("doubled running: %v", d.Errors[Running])
	t.Logf("flows held: %v", res[1].Errors[Held])
	// The running query alone still answers the larger product: the check,
	// not the arithmetic, refuses it.
	if vec, _, err := c.Instant(context.Background(), `round(max(llm_d_epp_average_running_requests{service="doubled-epp"}) * max(llm_d_epp_ready_endpoints{service="doubled-epp"}))`, time.Now()); err != nil || len(vec) != 1 || vec[0].Value != 60 {
		t.Errorf("doubled's running query alone: %v (%v), want 60", vec, err)
	}
	if v := d.Values[PoolSeries]; v != 2 {
		t.Errorf("doubled pool_series %v, want 2", v)
	}

	f := res[1]
	if err := f.Errors[Held]; !math.IsNaN(f.Values[Held]) || ReasonOf(err) != ReasonAmbiguous ||
		!strings.Contains(err.Error(), `target "flows"`) || !strings.Contains(err.Error(), `("chat" and "code")`) {
		t.Errorf("flows held %v (%v): want unknown, naming the target and pools chat and code", f.Values[Held], err)
	}
	if f.Values[Running] != 12 || f.Values[Current] != 3 || f.Errors[Running] != nil {
		t.Errorf("flows running %v current %v (%v), want 12 and 3", f.Values[Running], f.Values[Current], f.Errors)
	}

	g := res[2]
	if len(g.Errors) != 0 {
		t.Errorf("good errors: %v", g.Errors)
	}
	if o := g.Values; o[Running] != 10 || o[Held] != 3 || o[Current] != 4 || o[PoolSeries] != 1 {
		t.Errorf("good running %v held %v current %v pool_series %v, want 10 3 4 1", o[Running], o[Held], o[Current], o[PoolSeries])
	}
	o := res[3]
	if err := o.Errors[Held]; !math.IsNaN(o.Values[Held]) || ReasonOf(err) != ReasonAmbiguous ||
		!strings.Contains(err.Error(), `target "other": the flow-control series (label inference_pool) are of InferencePool "code", the ready endpoints (label name) of "p"`) {
		t.Errorf("other held %v (%v): want unknown, naming the target and pools code and p", o.Values[Held], err)
	}
	if o.Values[Running] != 12 || o.Values[Current] != 3 || o.Errors[Running] != nil {
		t.Errorf("other running %v current %v (%v), want 12 and 3", o.Values[Running], o.Values[Current], o.Errors)
	}
	// The batched queries (one per signal asked: running, waiting,
	// reporting, kv, current, held, pools, pool_series) and one to name
	// each of the three refused targets' series.
	if st.Queries != 8+3 {
		t.Errorf("queries %d, want 11", st.Queries)
	}
}

// TestNamesRegexp: the compact name regexp matches each name whole and
// nothing else: llm_d_epp_ready_endpoints and llm_d_epp_average_queue_size
// share llm_d_epp_, inference_pool_ready_pods stands alone.
func TestNamesRegexp(t *testing.T) {
	names := []string{"llm_d_epp_ready_endpoints", "inference_pool_ready_pods", "llm_d_epp_average_queue_size"}
	got := namesRegexp(names)
	if want := `llm_d_epp_(?:ready_endpoints|average_queue_size)|inference_pool_ready_pods`; got != want {
		t.Errorf("namesRegexp = %s, want %s", got, want)
	}
	re := regexp.MustCompile("^(?:" + got + ")$")
	for _, n := range names {
		if !re.MatchString(n) {
			t.Errorf("%s not matched", n)
		}
	}
	for _, n := range []string{"llm_d_epp_ready_endpoints_total", "llm_d_epp_", "inference_pool_average_queue_size", "llm_d_eppXready_endpoints"} {
		if re.MatchString(n) {
			t.Errorf("%s matched", n)
		}
	}
}
