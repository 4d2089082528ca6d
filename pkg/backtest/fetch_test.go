package backtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/promql"
)

// fakeAPI answers range queries from a map (query -> matrix) and instant
// queries with nothing; an unknown range query fails.
type fakeAPI struct {
	ranges map[string]model.Matrix
	fail   error
}

func (f fakeAPI) Instant(context.Context, string, time.Time) (model.Vector, []string, error) {
	return nil, nil, f.fail
}

func (f fakeAPI) Range(_ context.Context, q string, _, _ time.Time, _ time.Duration) (model.Matrix, []string, error) {
	if f.fail != nil {
		return nil, nil, f.fail
	}
	return f.ranges[q], nil, nil
}

func TestFetchErrors(t *testing.T) {
	ms, _ := promql.ParseSelector(`{namespace="llm"}`)
	g := Grid{Start: t0, Step: time.Minute, N: 2}
	tgt := Target{Server: modelserver.VLLM, Selector: ms, Replicas: `kube_deployment_spec_replicas`}
	// A failing query is an error, never no data.
	boom := &promql.QueryError{Reason: promql.ReasonUnavailable, Query: "x", Err: errors.New("connection refused")}
	if _, _, err := Fetch(context.Background(), fakeAPI{fail: boom}, tgt, g, nil); !errors.As(err, new(*promql.QueryError)) {
		t.Errorf("failing API: err %v, want the *promql.QueryError", err)
	}
	// A replicas query with two series is refused (which one ran?).
	two := model.Matrix{
		{Metric: model.Metric{"deployment": "a"}, Values: []model.SamplePair{{Timestamp: model.TimeFromUnix(t0.Unix()), Value: 1}}},
		{Metric: model.Metric{"deployment": "b"}, Values: []model.SamplePair{{Timestamp: model.TimeFromUnix(t0.Unix()), Value: 2}}},
	}
	_, _, err := Fetch(context.Background(), fakeAPI{ranges: map[string]model.Matrix{"kube_deployment_spec_replicas": two}}, tgt, g, nil)
	// Which advice fits depends on the series: their label sets are shown.
	for _, want := range []string{`returned 2 series ({deployment="a"}, {deployment="b"}); want one`, "narrow its matchers", "max(...) over copies"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("two replica series: err %v, want %q", err, want)
		}
	}
	// A replicas query that returns nothing is a warning naming it and the
	// range (2026-01-05 00:00 + 2 steps of 1 min): the report had no
	// actual rows and said only that fidelity needs the replicas timeline.
	_, st, err := Fetch(context.Background(), fakeAPI{ranges: map[string]model.Matrix{}}, tgt, g, nil)
	want := "replicas query kube_deployment_spec_replicas returned no samples over 2026-01-05T00:00:00Z..2026-01-05T00:02:00Z"
	// The running query returned nothing too (read first): the whole range
	// one gauge gap, said as well.
	if err != nil || len(st.Warnings) != 2 || !strings.HasPrefix(st.Warnings[0], "running query ") || !strings.HasPrefix(st.Warnings[1], want) {
		t.Errorf("empty replicas query: err %v, warnings %q; want the running query's, then one starting %q", err, st.Warnings, want)
	}
	// The running query's names both places the server profile is given:
	// it named the flag alone, where tune --shard and serve's tuning read
	// a config's target (server:), as their own errors say.
	if len(st.Warnings) == 2 && !strings.HasSuffix(st.Warnings[0], "check it in Prometheus (a label or metric name? the server profile: --server, a target's server:)") {
		t.Errorf("running query's warning %q: want it to end naming --server and a target's server:", st.Warnings[0])
	}
	// A value that is no replica count is refused naming the query, the
	// value and its time (the second step: 00:01): -2 (a difference of
	// counts), 1e9 (a sum of bytes), +Inf.
	for _, v := range []float64{-2, 1e9, math.Inf(1)} {
		one := model.Matrix{{Values: []model.SamplePair{
			{Timestamp: model.TimeFromUnix(t0.Unix()), Value: 3},
			{Timestamp: model.TimeFromUnix(t0.Unix() + 60), Value: model.SampleValue(v)}}}}
		_, _, err := Fetch(context.Background(), fakeAPI{ranges: map[string]model.Matrix{"kube_deployment_spec_replicas": one}}, tgt, g, nil)
		want := fmt.Sprintf("replicas query kube_deployment_spec_replicas: %g at 2026-01-05T00:01:00Z is no replica count", v)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("replicas %g: err %v, want %q", v, err, want)
		}
	}
	// An invalid replicas query is refused before any query runs.
	tgt.Replicas = "sum("
	if _, _, err := Fetch(context.Background(), fakeAPI{}, tgt, g, nil); !errors.Is(err, promql.ErrInvalidQuery) {
		t.Errorf("bad replicas query: err %v, want ErrInvalidQuery", err)
	}
	// A server without a success counter cannot be backtested.
	tgt = Target{Server: modelserver.LlamaCpp, Selector: ms}
	if _, _, err := Fetch(context.Background(), fakeAPI{}, tgt, g, nil); err == nil || !strings.Contains(err.Error(), "success counter") {
		t.Errorf("llamacpp: err %v, want a success-counter error", err)
	}
}

func TestReconstructNoTraffic(t *testing.T) {
	g := Grid{Start: t0, Step: time.Minute, N: 2}
	if _, err := Reconstruct(History{Grid: g}, Options{}); !errors.Is(err, ErrNoTraffic) {
		t.Errorf("err %v, want ErrNoTraffic", err)
	}
}

// TestFetchProgressTotal: the progress's total is the queries Fetch runs,
// so the last call says done == total. vLLM has every family: the
// success counter and its timestamps, running, waiting, the replicas, the
// prompt, output and TTFT histograms and the two token means, 10; over an
// hour or more the hourly TTFT too, 11 (the total said 13, and the
// progress stopped at 11/13); 12 with a counter that begins inside the
// range (below). The first call, before any query, says 0 of
// the total (a redirected stderr said nothing while a hung Prometheus held
// the first query for --query-timeout, 2 minutes by default).
func TestFetchProgressTotal(t *testing.T) {
	ms, _ := promql.ParseSelector(`{namespace="llm"}`)
	tgt := Target{Server: modelserver.VLLM, Selector: ms, Replicas: `kube_deployment_spec_replicas`}
	// A pod whose success counter begins inside the range (its first
	// sample a minute after the start: a scale-up, a restart, a rollout)
	// adds the instant query of its counter at the start, 12: the count
	// backtest's time line says on synth-week's history (docs/backtest.md).
	hour := Grid{Start: t0, Step: time.Minute, N: 60}
	q, err := buildQueries(tgt.Server, ms, hour.End().Sub(hour.Start), tgt.Replicas)
	if err != nil {
		t.Fatal(err)
	}
	at := model.TimeFromUnix(t0.Add(time.Minute).Unix())
	pod := model.Metric{"pod": "chat-1"}
	late := map[string]model.Matrix{
		q.Success:           {{Metric: pod, Values: []model.SamplePair{{Timestamp: at, Value: 5}}}},
		q.SuccessTimestamps: {{Metric: pod, Values: []model.SamplePair{{Timestamp: at, Value: model.SampleValue(at.Unix())}}}},
	}
	for _, c := range []struct {
		g      Grid
		ranges map[string]model.Matrix
		want   int
		first  int // the total said before the first query: the baseline is known to be needed after the success queries
	}{
		{Grid{Start: t0, Step: time.Minute, N: 2}, map[string]model.Matrix{}, 10, 10},
		{hour, map[string]model.Matrix{}, 11, 11},
		{hour, late, 12, 11},
	} {
		var calls [][2]int
		_, st, err := Fetch(context.Background(), fakeAPI{ranges: c.ranges}, tgt, c.g, func(done, total int) { calls = append(calls, [2]int{done, total}) })
		if err != nil {
			t.Fatal(err)
		}
		last := calls[len(calls)-1]
		if st.Queries != c.want || calls[0] != [2]int{0, c.first} || last != [2]int{c.want, c.want} || len(calls) != c.want+1 {
			t.Errorf("%d steps: %d queries, calls %v; want %d, the first 0/%d, the last %d/%d", c.g.N, st.Queries, calls, c.want, c.first, c.want, c.want)
		}
	}
}
