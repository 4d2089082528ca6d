package replay

import (
	"bytes"
	"context"
	"encoding/csv"
	"slices"
	"testing"

	"github.com/infscale/infscale/pkg/trace"
)

// TestTimelineReason: the timeline says why each count was decided, for the
// policies that decide through pkg/recommend, and nothing for the others.
// Worked from the HPA's algorithm: queue:100000 started warm on 2 replicas
// (as if it had asked for 2 until second 0) under steady traffic of a few
// dozen requests recommends ceil(queue / 100000) = 1; the HPA's default
// scaleDown window (300 s) holds the 2 it asked for at second 0 until that
// recommendation leaves the window, then 1, as the metric asks.
func TestTimelineReason(t *testing.T) {
	src, err := trace.ParseContext(context.Background(), "synthetic:poisson,rate=5,duration=10m", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Model: referenceModel(t), Timeline: true, Initial: 2}
	pol, err := ParsePolicy("queue:100000")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), src, pol, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Timeline) < 30 {
		t.Fatalf("timeline of %d rows", len(res.Timeline))
	}
	for _, s := range res.Timeline {
		switch {
		case s.T > 0 && s.T < 300:
			if s.Desired != 2 || s.Reason != "ScaleDownStabilized" || s.Metric != "queue" {
				t.Fatalf("at %v s: desired %d reason %q metric %q, want 2 ScaleDownStabilized queue", s.T, s.Desired, s.Reason, s.Metric)
			}
		case s.T > 300:
			if s.Desired != 1 || s.Reason != "DesiredWithinRange" || s.Metric != "queue" {
				t.Fatalf("at %v s: desired %d reason %q metric %q, want 1 DesiredWithinRange queue", s.T, s.Desired, s.Reason, s.Metric)
			}
		}
	}

	fix, err := ParsePolicy("fixed:2")
	if err != nil {
		t.Fatal(err)
	}
	res2, err := Run(context.Background(), src, fix, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res2.Timeline {
		if s.Reason != "" || s.Metric != "" {
			t.Fatalf("fixed:2 at %v s: reason %q metric %q, want none", s.T, s.Reason, s.Metric)
		}
	}

	// JSON leaves them out when empty; CSV has both columns.
	row := NewRow(res2, 1, 1, true)
	if e := row.Timeline[0]; e.Reason != "" || e.Metric != "" {
		t.Errorf("fixed:2 row: %+v", e)
	}
	var b bytes.Buffer
	if err := WriteTimelineCSV(&b, []Result{res}); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if h := recs[0]; !slices.Equal(h[len(h)-2:], []string{"reason", "metric"}) {
		t.Errorf("CSV header %v: want reason, metric last", h)
	}
	if r := recs[len(recs)-1]; r[len(r)-2] != "DesiredWithinRange" || r[len(r)-1] != "queue" {
		t.Errorf("CSV last row %v: want DesiredWithinRange, queue", r)
	}
}

// TestTimelineMetricNames: the metric column names what the consumer reads,
// not the internal slot the HPA arithmetic carries it in. hpa(POLICY)'s HPA
// reads POLICY's infscale_desired_replicas (docs/simulate.md, Policies):
// queue:100000 started warm on 2 asks for 2 while its scale-down window
// holds them, so the HPA sees 2 desired on 2 replicas, a ratio of 1, inside
// its 10% tolerance. llmd-queue's triggers (docs/llm-d.md) are
// sum(llm_d_epp_request_running) / 16 and the flow-control queue / 1: a few
// dozen requests a minute on 2 replicas run about ten at once with none held
// by flow control (under 5 waiting per replica, KV under 0.8), so the
// running trigger asks ceil(10 / 16) = 1 and the queue 0: the running
// trigger is the largest.
func TestTimelineMetricNames(t *testing.T) {
	src, err := trace.ParseContext(context.Background(), "synthetic:poisson,rate=5,duration=5m", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Model: referenceModel(t), Timeline: true, Initial: 2}
	for _, c := range []struct{ policy, reason, metric string }{
		{"hpa(queue:100000)", "tolerance", "infscale_desired_replicas"},
		{"llmd-queue", "", "llm_d_epp_request_running"},
	} {
		pol, err := ParsePolicy(c.policy)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), src, pol, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range res.Timeline {
			if s.T >= 300 {
				continue // past the first scale-down window
			}
			if s.Metric != c.metric || s.Reason == "" || (c.reason != "" && s.Reason != c.reason) {
				t.Fatalf("%s at %v s: reason %q metric %q, want %q (reason %q)", c.policy, s.T, s.Reason, s.Metric, c.metric, c.reason)
			}
		}
	}
}

// TestPDTimelineReason: a P/D run's timeline says why each pool's count was
// decided, as a single pool's does: the pair rule (recommended) for both
// pools, pd(queue:100000;fixed:2)'s queue policy for the prefill pool (its
// one metric, queue) and nothing for fixed:2; the CSV carries reason and
// metric after misses.
func TestPDTimelineReason(t *testing.T) {
	src, err := trace.ParseContext(context.Background(), "synthetic:poisson,rate=5,duration=5m", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Model: referenceModel(t), Timeline: true}
	var rows []PDRow
	for _, spec := range []string{"recommended", "pd(queue:100000;fixed:2)"} {
		pol, err := ParsePDPolicy(spec)
		if err != nil {
			t.Fatal(err)
		}
		res, err := RunPD(context.Background(), src, pol, cfg, PDConfig{KVLinkBytesPerSecond: 25e9})
		if err != nil {
			t.Fatal(err)
		}
		row := NewPDRow(res, true)
		if len(row.PrefillTimeline) < 10 || len(row.DecodeTimeline) < 10 {
			t.Fatalf("%s: timelines of %d and %d rows", spec, len(row.PrefillTimeline), len(row.DecodeTimeline))
		}
		for _, pool := range []struct {
			role      string
			tl        []TimelineEntry
			explained bool
			metric    string
		}{
			{"prefill", row.PrefillTimeline, true, map[string]string{"recommended": "", "pd(queue:100000;fixed:2)": "queue"}[spec]},
			{"decode", row.DecodeTimeline, spec == "recommended", ""},
		} {
			for _, e := range pool.tl {
				switch {
				case pool.explained && (e.Reason == "" || e.Metric == "" || (pool.metric != "" && e.Metric != pool.metric)):
					t.Fatalf("%s %s at %v s: reason %q metric %q, want both (metric %q)", spec, pool.role, e.T, e.Reason, e.Metric, pool.metric)
				case !pool.explained && (e.Reason != "" || e.Metric != ""):
					t.Fatalf("%s %s at %v s: reason %q metric %q, want none", spec, pool.role, e.T, e.Reason, e.Metric)
				}
			}
		}
		rows = append(rows, row)
	}
	var b bytes.Buffer
	if err := WritePDTimelineCSV(&b, rows); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if h := recs[0]; !slices.Equal(h[len(h)-3:], []string{"misses", "reason", "metric"}) {
		t.Errorf("CSV header %v: want misses, reason, metric last", h)
	}
	if r := recs[1]; r[0] != "recommended" || r[1] != "prefill" || r[len(r)-2] == "" {
		t.Errorf("CSV first row %v: want recommended's prefill row with a reason", r)
	}
}

// TestPDLLMDTokensTriggers: llm-d's P/D overlay splits llmd-tokens' two
// triggers between the pools (docs/llm-d.md): the prefill pool scales on
// llm_d_epp_inflight_tokens alone, the decode pool on
// vllm:kv_cache_usage_perc alone, so each pool's timeline names its own
// trigger in every period, an idle one's included (both slots at 0): ten
// requests in the first 10 s, done within seconds, then none until 300 s.
func TestPDLLMDTokensTriggers(t *testing.T) {
	var reqs []trace.Request
	for i := range 10 {
		reqs = append(reqs, trace.Request{Arrival: float64(i), Prompt: 200, Output: 20})
	}
	src := trace.FromSlice("idle", 300, append(reqs, trace.Request{Arrival: 300, Prompt: 200, Output: 20}))
	pol, err := ParsePDPolicy("llmd-tokens")
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunPD(context.Background(), src, pol, Config{Model: referenceModel(t), Timeline: true}, PDConfig{KVLinkBytesPerSecond: 25e9})
	if err != nil {
		t.Fatal(err)
	}
	for _, pool := range []struct {
		tl     []Sample
		metric string
	}{{res.Prefill.Timeline, "llm_d_epp_inflight_tokens"}, {res.Decode.Timeline, "vllm:kv_cache_usage_perc"}} {
		if len(pool.tl) < 10 {
			t.Fatalf("timeline of %d rows", len(pool.tl))
		}
		for _, s := range pool.tl {
			if s.Metric != pool.metric || s.Reason == "" {
				t.Fatalf("at %v s: reason %q metric %q, want %q", s.T, s.Reason, s.Metric, pool.metric)
			}
		}
	}
}
