package tune

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/config"
)

// ttftAPI answers the TTFT histogram's increase (le -> count) and
// nothing else.
type ttftAPI struct{ buckets map[string]float64 }

func (a ttftAPI) Instant(ctx context.Context, q string, ts time.Time) (model.Vector, []string, error) {
	if !strings.Contains(q, "time_to_first_token_seconds_bucket") {
		return nil, nil, nil
	}
	var v model.Vector
	for le, n := range a.buckets {
		v = append(v, &model.Sample{Metric: model.Metric{"le": model.LabelValue(le)}, Value: model.SampleValue(n), Timestamp: model.TimeFromUnixNano(ts.UnixNano())})
	}
	return v, nil, nil
}

func (a ttftAPI) Range(ctx context.Context, q string, start, end time.Time, step time.Duration) (model.Matrix, []string, error) {
	return nil, nil, nil
}

// TestLiveMissesStraddlingBucket: the live check counts as late only the
// requests the TTFT histogram proves late, those in buckets wholly above
// slo_ttft. vLLM's buckets are (1, 2.5] around the default 2 s; a linear
// split of that bucket counted a third of it late, where replays of
// vLLM-like TTFTs put 0 to 26% of it above 2 s (long prompts: 0.085% late
// read as 3.45%, over a 0.1% budget, and the revert then blocks the policy
// for good). Here 10,000 requests, 995 in (1, 2.5], 5 above 2.5 s: 0.05%
// are proven late at 2 s, where the split read (5 + 995/3) / 10,000 =
// 3.37%. At a bucket edge the count is exact.
func TestLiveMissesStraddlingBucket(t *testing.T) {
	api := ttftAPI{map[string]float64{"0.5": 6000, "1": 9000, "2.5": 9995, "5": 9999, "+Inf": 10000}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		slo    string
		want   float64
		lo, hi float64 // the bucket holding slo inside it; 0, 0 at a bound
	}{
		{"2s", 5.0 / 10000, 1, 2.5},
		{"2500ms", 5.0 / 10000, 0, 0},
		{"1s", 1000.0 / 10000, 0, 0},
		{"800ms", 1000.0 / 10000, 0.5, 1},
		{"10ms", 4000.0 / 10000, 0, 0.5},
		{"6s", 0, 5, math.Inf(1)},
	} {
		f, err := config.Parse([]byte(`prometheus: {url: "http://prometheus:9090"}
targets:
- name: chat
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 8
  tune: {slo_ttft: `+c.slo+`}
`), "tune.yaml")
		if err != nil {
			t.Fatal(err)
		}
		r, ok, err := LiveMisses(context.Background(), api, &f.Targets[0], now.Add(-time.Hour), now, 15*time.Second)
		if err != nil || !ok || r.Requests != 10000 {
			t.Fatalf("slo %s: %v %v %v", c.slo, r.Requests, ok, err)
		}
		if math.Abs(r.Late-c.want) > 1e-12 {
			t.Errorf("slo %s: miss ratio %g, want %g", c.slo, r.Late, c.want)
		}
		if r.Lo != c.lo || r.Hi != c.hi {
			t.Errorf("slo %s: straddled bucket (%g, %g], want (%g, %g]", c.slo, r.Lo, r.Hi, c.lo, c.hi)
		}
	}
}

// splitReplicasAPI is ttftAPI whose replicas query answers two series,
// as kube_deployment_spec_replicas does over a span in which
// kube-state-metrics was restarted under another pod or instance label.
type splitReplicasAPI struct{ ttftAPI }

func (a splitReplicasAPI) Range(ctx context.Context, q string, start, end time.Time, step time.Duration) (model.Matrix, []string, error) {
	if !strings.Contains(q, "kube_deployment_spec_replicas") {
		return nil, nil, nil
	}
	var m model.Matrix
	for _, inst := range []string{"ksm-a", "ksm-b"} {
		m = append(m, &model.SampleStream{Metric: model.Metric{"__name__": "kube_deployment_spec_replicas", "instance": model.LabelValue(inst)},
			Values: []model.SamplePair{{Timestamp: model.TimeFromUnixNano(start.UnixNano()), Value: 3}}})
	}
	return m, nil, nil
}

// TestLiveMissesIgnoresReplicasQuery: the live misses come from the TTFT
// histogram alone, so the target's replicas: query does not take part.
// A replicas series split in two over the span (kube-state-metrics
// restarted under another label) failed the read, "returned 2 series",
// and the adopted candidate was not reverted however it missed, until
// the split left the span (tune.history after the switch: a week by
// default). Here 5 of 10,000 requests above 2.5 s: 0.05%.
func TestLiveMissesIgnoresReplicasQuery(t *testing.T) {
	api := splitReplicasAPI{ttftAPI{map[string]float64{"1": 9000, "2.5": 9995, "+Inf": 10000}}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f, err := config.Parse([]byte(`prometheus: {url: "http://prometheus:9090"}
targets:
- name: chat
  selector: '{namespace="llm"}'
  replicas: 'kube_deployment_spec_replicas{namespace="llm",deployment="chat"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 8
  tune: {slo_ttft: 2500ms}
`), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, ok, err := LiveMisses(context.Background(), api, &f.Targets[0], now.Add(-time.Hour), now, 15*time.Second)
	if err != nil || !ok {
		t.Fatalf("live misses not read: ok %v, %v", ok, err)
	}
	if r.Requests != 10000 || math.Abs(r.Late-5.0/10000) > 1e-12 {
		t.Errorf("read %g late of %g requests, want 0.0005 of 10000", r.Late, r.Requests)
	}
}
