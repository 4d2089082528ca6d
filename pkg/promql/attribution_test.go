package promql

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/modelserver"
)

// branchAPI answers a batched query with one sample 1 for branch 0 (the
// first target) only, or fails every query with err when set.
type branchAPI struct{ err error }

func (a branchAPI) Instant(_ context.Context, q string, _ time.Time) (model.Vector, []string, error) {
	if a.err != nil {
		return nil, nil, a.err
	}
	return model.Vector{{Metric: model.Metric{TargetLabel: "0"}, Value: 1}}, nil, nil
}

func (branchAPI) Range(context.Context, string, time.Time, time.Time, time.Duration) (model.Matrix, []string, error) {
	return nil, nil, nil
}

// Issue 23 item 9: two targets, chat then batch, in one batched query per
// signal. Whatever fails for batch (no series of its own; the whole query
// failing) is quoted with batch's selector, never chat's (the batch's text
// begins with chat's query).
func TestErrorsNameTheirOwnTarget(t *testing.T) {
	chat, err := ParseSelector(`{app="chat"}`)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := ParseSelector(`{app="batch"}`)
	if err != nil {
		t.Fatal(err)
	}
	ts := []Target{{Name: "chat", Server: modelserver.VLLM, Selector: chat}, {Name: "batch", Server: modelserver.VLLM, Selector: batch}}
	at := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	for _, api := range []branchAPI{{}, {err: errors.New("connection refused")}} {
		p := NewPlan(ts, Options{}, 0)
		res, _ := (&Evaluator{API: api}).Run(context.Background(), p, at)
		if len(res[1].Errors) == 0 {
			t.Fatalf("api error %v: target batch has no errors", api.err)
		}
		for s, e := range res[1].Errors {
			msg := e.Error()
			if strings.Contains(msg, `app="chat"`) || !strings.Contains(msg, `app="batch"`) {
				t.Errorf("api error %v: batch's %s error quotes another target: %s", api.err, s, msg)
			}
		}
		for s, e := range res[0].Errors {
			if msg := e.Error(); strings.Contains(msg, `app="batch"`) {
				t.Errorf("api error %v: chat's %s error quotes batch: %s", api.err, s, msg)
			}
		}
	}
}

// A batch Prometheus refuses (bad_data) although each target's own query
// passes backs off; while it waits, each target carries the refusal
// quoting its own query.
func TestBackedOffBatchNamesItsTarget(t *testing.T) {
	ts := fallbackTargets(t, 2)
	batch, err := ParseSelector(`{app="batch"}`)
	if err != nil {
		t.Fatal(err)
	}
	ts[1].Name, ts[1].Selector = "batch", batch
	e := &Evaluator{API: &rejectingAPI{}}
	p := NewPlan(ts, Options{}, 0)
	at := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	e.Run(context.Background(), p, at)
	res, _ := e.Run(context.Background(), p, at.Add(15*time.Second)) // within the backoff (>= 30 s)
	e1 := res[1].Errors[Running]
	if ReasonOf(e1) != ReasonBadData || strings.Contains(e1.Error(), `app="chat"`) || !strings.Contains(e1.Error(), `app="batch"`) {
		t.Errorf("batch's running error while backed off: %v, want bad_data quoting {app=\"batch\"}", e1)
	}
}
