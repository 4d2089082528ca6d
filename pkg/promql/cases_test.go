package promql

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunks"
)

// vectorSeries turns one API response of a case fixture into stored
// series: each sample becomes a one-sample series at its timestamp, under
// the response's metric name (or name when the response has none).
func vectorSeries(t *testing.T, body, name string) []storage.Series {
	t.Helper()
	var resp struct {
		Data struct {
			Result model.Vector `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	var out []storage.Series
	for _, s := range resp.Data.Result {
		b := labels.NewBuilder(labels.EmptyLabels())
		for k, v := range s.Metric {
			b.Set(string(k), string(v))
		}
		if _, ok := s.Metric[model.MetricNameLabel]; !ok {
			b.Set(labels.MetricName, name)
		}
		out = append(out, storage.NewListSeries(b.Labels(), []chunks.Sample{fSample{t: int64(s.Timestamp), f: float64(s.Value)}}))
	}
	return out
}

func fixtureAPI(t *testing.T, series ...[]storage.Series) *engineAPI {
	t.Helper()
	st := &memStore{}
	for _, s := range series {
		st.series = append(st.series, s...)
	}
	ng := newEngineAPI(t, "")
	ng.storage = st
	return ng
}

// Case 13 from its fixtures: the running vector has four pods, the up
// vector only the two live ones. expected.md: running = 22 over 2 replicas
// (12 + 10), not 42 (12 + 10 + 11 + 9) over 2 or over 4.
func TestCase13StaleSeriesFixture(t *testing.T) {
	running := caseLines(t, "13-stale-series-terminated-pods.json")
	ready := caseLines(t, "13-stale-series-terminated-pods.ready.json")
	api := fixtureAPI(t, vectorSeries(t, running[0], ""), vectorSeries(t, ready[0], ""))
	tg := sel(t, `{model_name="m"}`)
	ev := &Evaluator{API: api}
	res, _ := ev.Evaluate(context.Background(), []Target{tg}, time.Unix(1737152900, 0))
	o := res[0].Values
	if !near(o[Running], 22) || o[Reporting] != 2 || o[Current] != 2 {
		t.Fatalf("running %v over %v pods (current %v), want 22 over 2; errors %v", o[Running], o[Reporting], o[Current], res[0].Errors)
	}
}

// Case 16 from its fixture: cached-token rate (with an extra cache_source
// label) over prompt-token rate. expected.md: the one-to-one division finds
// no pair and is EMPTY (unknown, never 0); the shape infscale builds
// (perPodRatio, used by the CPU signal) reduces both sides to the pod label
// first: 120.5 / 400 = 0.30125.
func TestCase16LabelMismatchFixture(t *testing.T) {
	lines := caseLines(t, "16-promql-label-mismatch-empty-division.json")
	if len(lines) != 3 {
		t.Fatalf("fixture has %d responses, want 3", len(lines))
	}
	api := fixtureAPI(t, vectorSeries(t, lines[0], "cached_rate"), vectorSeries(t, lines[1], "prompt_rate"))
	at := time.Unix(1737152900, 0)
	cached, prompt := selector("cached_rate", nil), selector("prompt_rate", nil)

	shaped := perPodRatio([]string{"pod"}, cached, prompt).String()
	v, _, err := api.Instant(context.Background(), shaped, at)
	if err != nil {
		t.Fatal(err)
	}
	got, err := single(vectorValues(v), shaped)
	if err != nil || !near(got, 0.30125) {
		t.Fatalf("%s = %v (%v), want 0.30125", shaped, got, err)
	}

	naive := binary(parser.DIV, cached, prompt, nil).String()
	v, _, err = api.Instant(context.Background(), naive, at)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := single(vectorValues(v), naive); ReasonOf(err) != ReasonEmpty {
		t.Fatalf("%s: %v, want empty (the fixture's third response is [] too)", naive, err)
	}
}

func vectorValues(v model.Vector) []float64 {
	out := make([]float64, len(v))
	for i, s := range v {
		out[i] = float64(s.Value)
	}
	return out
}

// single reduces one target's samples to one number, as runBatch does.
func single(vals []float64, q string) (float64, error) {
	var b branchValues
	for _, v := range vals {
		b.add(v)
	}
	return b.single(q)
}
