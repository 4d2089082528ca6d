package backtest

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/synthweek"
	"github.com/infscale/infscale/pkg/synthweek/synthweektest"
)

// TestReconstructFromPrometheus writes the synthetic week, loads it with
// promtool into a real TSDB, serves it with the pinned Prometheus and
// rebuilds the workload only through the HTTP API.
func TestReconstructFromPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled week")
	}
	srv, truth := synthweektest.Serve(t, synthweek.Config{Scrape: 2 * time.Minute})
	api, ms, g := llmHistory(t, srv.URL, truth.Start, truth.End)
	tgt := Target{Server: modelserver.VLLM, Selector: ms,
		Replicas: `sum(kube_deployment_spec_replicas{namespace="llm",deployment="chat"})`}
	h, st, err := Fetch(context.Background(), api, tgt, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Reconstruct(h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("queries %d, points %d, %s; requests %.0f (truth %d, of which %d aborted by the restart); series %d", st.Queries, st.Points, st.Duration, w.Requests, truth.Requests, truth.Aborted, len(h.Success))

	// Total requests within 2% of the generated ones.
	if rel := math.Abs(w.Requests-float64(truth.Requests)) / float64(truth.Requests); rel > 0.02 {
		t.Errorf("requests %.0f, truth %d: off by %.2f%%, want <= 2%%", w.Requests, truth.Requests, 100*rel)
	}
	// Replica-minutes within 1%.
	got := w.ReplicaSeconds() / 60
	want := truth.ReplicaSeconds / 60
	t.Logf("replica-minutes %.1f, truth %.1f; gaps %v", got, want, w.Coverage.Gaps)
	if rel := math.Abs(got-want) / want; rel > 0.01 {
		t.Errorf("replica-minutes %.1f, truth %.1f: off by %.2f%%, want <= 1%%", got, want, 100*rel)
	}
	// The gap is reported: one gap covering Friday 16:00-16:20 (the
	// samples that bound it are 2 minutes either side at most).
	found := false
	for _, gp := range w.Coverage.Gaps {
		if !gp.From.After(truth.Gap[0]) && !gp.To.Before(truth.Gap[1]) && gp.Duration() <= 24*time.Minute {
			found = true
		}
	}
	if !found || len(w.Coverage.Gaps) != 1 {
		t.Errorf("gaps %v, want exactly one around %v..%v", w.Coverage.Gaps, truth.Gap[0], truth.Gap[1])
	}
	// No negative or doubled rates across the reset: the arrivals of the
	// 10 minutes after the restart stay within 1.5× of the 10 minutes
	// before (the generated rate moves by less than 5% in 20 minutes).
	j := int(truth.Restart.Sub(g.Start) / g.Step)
	var before, after float64
	for k := j - 10; k < j; k++ {
		before += w.Arrivals[k]
	}
	for k := j; k < j+10; k++ {
		after += w.Arrivals[k]
	}
	if after > 1.5*before || after < before/1.5 {
		t.Errorf("arrivals around the restart: %.0f before, %.0f after; want about equal", before, after)
	}
	for k, a := range w.Arrivals {
		if a < 0 {
			t.Fatalf("negative arrivals %v at step %d", a, k)
		}
	}
	// Token means: the counters' means equal the generated ones.
	if math.Abs(w.Prompt.Mean-truth.PromptMean)/truth.PromptMean > 0.02 {
		t.Errorf("prompt mean %.1f, truth %.1f", w.Prompt.Mean, truth.PromptMean)
	}
	if w.Prompt.Hist == nil || w.Output.Hist == nil || w.TTFT == nil {
		t.Errorf("histograms missing: prompt %v output %v ttft %v", w.Prompt.Hist, w.Output.Hist, w.TTFT)
	}
	if len(w.TTFTHourly) < 160 {
		t.Errorf("%d hourly TTFT values, want about 168", len(w.TTFTHourly))
	}
}

// llmHistory is a client of the Prometheus at url, the selector
// {namespace="llm"} of the synthetic histories and their grid of 1-minute
// steps over [start, end].
func llmHistory(t *testing.T, url string, start, end time.Time) (promql.API, []*labels.Matcher, Grid) {
	t.Helper()
	api, err := promql.NewClient(promql.ClientConfig{URL: url, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := promql.ParseSelector(`{namespace="llm"}`)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGrid(start, end, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return api, ms, g
}
