package promql

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/modelserver"
)

// rejectingAPI answers every single-target query with one sample 1 and
// rejects (bad_data, HTTP 400) every batched query, and any query
// containing bad, counting the queries.
type rejectingAPI struct {
	mu      sync.Mutex
	queries int
	bad     string
}

func (a *rejectingAPI) Instant(_ context.Context, q string, _ time.Time) (model.Vector, []string, error) {
	a.mu.Lock()
	a.queries++
	a.mu.Unlock()
	if strings.Contains(q, "label_replace(") || (a.bad != "" && strings.Contains(q, a.bad)) {
		return nil, nil, &QueryError{Reason: ReasonBadData, Query: q, Err: fmt.Errorf("400 bad_data")}
	}
	return model.Vector{{Value: 1}}, nil, nil
}

func (a *rejectingAPI) Range(context.Context, string, time.Time, time.Time, time.Duration) (model.Matrix, []string, error) {
	return nil, nil, nil
}

func (a *rejectingAPI) take() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.queries
	a.queries = 0
	return n
}

func fallbackTargets(t *testing.T, n int) []Target {
	t.Helper()
	sel, err := ParseSelector(`{app="chat"}`)
	if err != nil {
		t.Fatal(err)
	}
	ts := make([]Target, n)
	for i := range ts {
		ts[i] = Target{Name: fmt.Sprintf("t%d", i), Server: modelserver.VLLM, Selector: sel}
	}
	return ts
}

// Issue 13 item 9: 100 targets, every batch answered 400. The plan has
// B batches (one per signal); the first Run retries each target alone once:
// B + 100·B queries. The batches are refused although every target's own
// query passes, so the per-target retry backs off for at least
// FallbackBackoff/2 (30 s, the jitter's lower bound): the next Runs, 15 s
// apart, send the B batches only, and every target carries the batch's
// error (unknown, never 0). After the longest first backoff (60 s) the
// per-target retry runs once more, then waits at least 60 s (the doubled
// backoff's lower bound).
func TestFallbackBounded(t *testing.T) {
	api := &rejectingAPI{}
	e := &Evaluator{API: api}
	ts := fallbackTargets(t, 100)
	p := NewPlan(ts, Options{}, 0)
	b := p.Queries()
	at := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	res, _ := e.Run(context.Background(), p, at)
	if got, want := api.take(), b+100*b; got != want {
		t.Fatalf("first Run: %d queries, want %d (%d batches + one retry per target and batch)", got, want, b)
	}
	if res[7].Values[Running] != 1 {
		t.Errorf("running after the fallback %v, want 1", res[7].Values[Running])
	}
	for s := 15; s < 30; s += 15 {
		res, _ = e.Run(context.Background(), p, at.Add(time.Duration(s)*time.Second))
		if got := api.take(); got != b {
			t.Errorf("t=%ds: %d queries, want %d (the batches only, in backoff)", s, got, b)
		}
		if ReasonOf(res[7].Errors[Running]) != ReasonBadData {
			t.Errorf("t=%ds: running error %v, want bad_data", s, res[7].Errors[Running])
		}
	}
	e.Run(context.Background(), p, at.Add(60*time.Second))
	if got := api.take(); got != b+100*b {
		t.Errorf("t=60s: %d queries, want %d (one retry per target after the backoff)", got, b+100*b)
	}
	for s := 75; s < 120; s += 15 {
		e.Run(context.Background(), p, at.Add(time.Duration(s)*time.Second))
		if got := api.take(); got != b {
			t.Errorf("t=%ds: %d queries, want %d (doubled backoff, >= 60 s)", s, got, b)
		}
	}
}

// One target whose own query is rejected (a bad override) is left out of
// the batches after the first fallback: the others are read with one query
// per batch, and it is retried alone at most once per backoff period.
func TestFallbackQuarantinesOneTarget(t *testing.T) {
	api := &rejectingAPI{bad: "bad_override"}
	ts := fallbackTargets(t, 100)
	ts[42].Overrides = map[Signal]string{Running: "sum(bad_override)"}
	// Only batches containing the bad query are refused.
	api2 := &onlyBadAPI{rejectingAPI: api}
	e := &Evaluator{API: api2}
	p := NewPlan(ts, Options{}, 0)
	b := p.Queries()
	at := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	e.Run(context.Background(), p, at)
	if got, want := api.take(), b+100; got != want {
		t.Fatalf("first Run: %d queries, want %d (batches + the running batch's 100 retries)", got, want)
	}
	res, _ := e.Run(context.Background(), p, at.Add(15*time.Second))
	if got := api.take(); got != b {
		t.Errorf("second Run: %d queries, want %d (the running batch without target 42)", got, b)
	}
	if res[3].Values[Running] != 1 || ReasonOf(res[42].Errors[Running]) != ReasonBadData {
		t.Errorf("target 3 running %v, target 42 error %v: want 1 and bad_data", res[3].Values[Running], res[42].Errors[Running])
	}
	e.Run(context.Background(), p, at.Add(60*time.Second))
	if got := api.take(); got != b+1 {
		t.Errorf("after the backoff: %d queries, want %d (target 42 retried alone once)", got, b+1)
	}
}

// onlyBadAPI refuses only the queries containing the bad text (a batch
// with target 42's branch included).
type onlyBadAPI struct{ *rejectingAPI }

func (a *onlyBadAPI) Instant(_ context.Context, q string, _ time.Time) (model.Vector, []string, error) {
	a.mu.Lock()
	a.queries++
	a.mu.Unlock()
	if strings.Contains(q, a.bad) {
		return nil, nil, &QueryError{Reason: ReasonBadData, Query: q, Err: fmt.Errorf("400 bad_data")}
	}
	if strings.Contains(q, "label_replace(") {
		// one sample per branch, tagged
		var v model.Vector
		for k := 0; k < 100; k++ {
			if strings.Contains(q, fmt.Sprintf(`"%s", "%d"`, TargetLabel, k)) {
				v = append(v, &model.Sample{Metric: model.Metric{TargetLabel: model.LabelValue(fmt.Sprint(k))}, Value: 1})
			}
		}
		return v, nil, nil
	}
	return model.Vector{{Value: 1}}, nil, nil
}
