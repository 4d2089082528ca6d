package promql

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/modelserver"
)

// signalAPI answers each query of one target (matched by its exact text,
// as Build prints it) with a set value per signal, and counts the queries
// sent per signal. Run calls it from several goroutines: mu guards it.
type signalAPI struct {
	mu     sync.Mutex
	bySig  map[string]Signal
	values map[Signal]float64
	fail   map[Signal]error
	sent   map[Signal]int
}

func newSignalAPI(t *testing.T, tg Target, opts Options) *signalAPI {
	t.Helper()
	qs, err := Build(tg, opts)
	if err != nil {
		t.Fatal(err)
	}
	a := &signalAPI{bySig: map[string]Signal{}, values: map[Signal]float64{}, fail: map[Signal]error{}, sent: map[Signal]int{}}
	for s, q := range qs {
		a.bySig[q] = s
	}
	return a
}

func (a *signalAPI) Instant(_ context.Context, q string, _ time.Time) (model.Vector, []string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.bySig[q]
	if !ok {
		return nil, nil, fmt.Errorf("unexpected query %s", q)
	}
	a.sent[s]++
	if err := a.fail[s]; err != nil {
		return nil, nil, err
	}
	v, ok := a.values[s]
	if !ok {
		return model.Vector{}, nil, nil
	}
	return model.Vector{{Value: model.SampleValue(v)}}, nil, nil
}

func (a *signalAPI) Range(context.Context, string, time.Time, time.Time, time.Duration) (model.Matrix, []string, error) {
	panic("not used")
}

// TestStuckCadence runs one target through cycles 15 s apart with the
// default StuckWindow (2 min): the stuck count is read at most once per
// 2 min / 4 = 30 s, and reused in between, while the stuck pods' waiting
// is read every cycle the reused count is > 0.
//
// By hand, with running 10, waiting 20, reporting 3, kv 0.5 throughout:
//   - t:     read stuck = 1 (5 first-round queries) and stuck_waiting 6
//     (1 more); 6 queries.
//   - the pod recovers: Prometheus now says stuck 0 and stuck_waiting 4.
//   - t+15s: 15 s < 30 s, stuck not sent (4 first-round queries); the
//     reused count 1 > 0 sends stuck_waiting: 4; 5 queries.
//   - t+30s: 30 s >= 30 s, stuck read again: 0, no second round:
//     stuck_waiting unknown; 5 queries.
//   - t+45s: 15 s after the read: reused 0: 4 queries.
//
// Stuck sent at t and t+30s (2), stuck_waiting at t and t+15s (2).
func TestStuckCadence(t *testing.T) {
	tg := Target{Name: "chat", Server: modelserver.VLLM, Selector: sel(t, `{namespace="llm"}`).Selector, Stuck: true}
	api := newSignalAPI(t, tg, Options{})
	api.values = map[Signal]float64{Running: 10, Waiting: 20, Reporting: 3, KV: 0.5, Stuck: 1, StuckWaiting: 6}
	ev := &Evaluator{API: api}
	cycle := func(dt time.Duration) (Result, int) {
		t.Helper()
		res, st := ev.Evaluate(context.Background(), []Target{tg}, at.Add(dt))
		return res[0], st.Queries
	}
	type want struct {
		stuck, stuckWaiting float64 // NaN: not asked
		queries             int
	}
	nan := math.NaN()
	same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
	check := func(name string, r Result, q int, w want) {
		t.Helper()
		if r.Stuck != w.stuck || !same(r.Values[StuckWaiting], w.stuckWaiting) || r.Values[Waiting] != 20 || r.Values[Reporting] != 3 || q != w.queries {
			t.Errorf("%s: stuck %v stuck_waiting %v waiting %v reporting %v queries %d (errors %v), want %v %v 20 3 %d",
				name, r.Stuck, r.Values[StuckWaiting], r.Values[Waiting], r.Values[Reporting], q, r.Errors, w.stuck, w.stuckWaiting, w.queries)
		}
	}
	r, q := cycle(0)
	check("t", r, q, want{1, 6, 6})
	api.values[Stuck], api.values[StuckWaiting] = 0, 4
	r, q = cycle(15 * time.Second)
	check("t+15s", r, q, want{1, 4, 5})
	r, q = cycle(30 * time.Second)
	check("t+30s", r, q, want{0, nan, 5})
	r, q = cycle(45 * time.Second)
	check("t+45s", r, q, want{0, nan, 4})
	if api.sent[Stuck] != 2 || api.sent[StuckWaiting] != 2 {
		t.Errorf("sent stuck %d, stuck_waiting %d; want 2 (t, t+30s) and 2 (t, t+15s)", api.sent[Stuck], api.sent[StuckWaiting])
	}

	// A rebuilt plan (the targets changed) reads stuck at once, 5 s after
	// the last read: stuck 2 now, stuck_waiting 4; 6 queries.
	api.values[Stuck] = 2
	tg.Name = "chat2"
	r, q = cycle(50 * time.Second)
	check("rebuilt at t+50s", r, q, want{2, 4, 6})
	if api.sent[Stuck] != 3 {
		t.Errorf("sent stuck %d after the rebuild, want 3", api.sent[Stuck])
	}

	// A clock that went back (t+40s, before the read at t+50s) reads again.
	api.values[Stuck] = 0
	r, q = cycle(40 * time.Second)
	check("back to t+40s", r, q, want{0, nan, 5})
}

// TestStuckCadenceWindowAndError: with StuckWindow 1m the count is read
// every 1m / 4 = 15 s, cycles 10 s apart. A read refused by Prometheus is
// read again at the next cycle (TestStuckReadAgainAfterOutage): at 0 and
// 10 s refused (unknown, an error, no second round: stuck_waiting
// unknown), then read at 20 s, reused at 30 s (10 < 15), read at 40 s
// (20 >= 15): 4 reads in 5 cycles.
func TestStuckCadenceWindowAndError(t *testing.T) {
	opts := Options{StuckWindow: time.Minute}
	tg := Target{Name: "chat", Server: modelserver.VLLM, Selector: sel(t, `{namespace="llm"}`).Selector, Stuck: true}
	api := newSignalAPI(t, tg, opts)
	api.values = map[Signal]float64{Running: 10, Waiting: 20, Reporting: 3, KV: 0.5, Stuck: 1, StuckWaiting: 6}
	api.fail[Stuck] = errors.New("connection refused")
	ev := &Evaluator{API: api, Options: opts}
	for i, dt := range []time.Duration{0, 10 * time.Second, 20 * time.Second, 30 * time.Second, 40 * time.Second} {
		res, _ := ev.Evaluate(context.Background(), []Target{tg}, at.Add(dt))
		r := res[0]
		switch i {
		case 0, 1: // refused, then refused again
			if !math.IsNaN(r.Stuck) || r.Errors[Stuck] == nil || !math.IsNaN(r.Values[StuckWaiting]) {
				t.Errorf("%v: stuck %v error %v stuck_waiting %v; want NaN, an error, NaN", dt, r.Stuck, r.Errors[Stuck], r.Values[StuckWaiting])
			}
			if i == 1 {
				delete(api.fail, Stuck) // Prometheus is back
			}
		default: // read at 20 s (1), reused at 30 s, read at 40 s: stuck_waiting 6
			if r.Stuck != 1 || r.Errors[Stuck] != nil || r.Values[StuckWaiting] != 6 {
				t.Errorf("%v: stuck %v error %v stuck_waiting %v; want 1, none, 6", dt, r.Stuck, r.Errors[Stuck], r.Values[StuckWaiting])
			}
		}
	}
	// Reads at 0, 10 s, 20 s, 40 s; stuck_waiting at 20, 30, 40 s.
	if api.sent[Stuck] != 4 || api.sent[StuckWaiting] != 3 {
		t.Errorf("sent stuck %d, stuck_waiting %d; want 4 and 3", api.sent[Stuck], api.sent[StuckWaiting])
	}
}

// TestStuckReadAgainAfterOutage: cycles 15 s apart, the default cadence
// (30 s). At t Prometheus refuses every query; at t+15s it is back, with a
// stuck pod (stuck 1, its waiting 6). The stuck count is read again at
// t+15s, not reused with the refusal until t+30s: read at once, stuck 1
// and stuck_waiting 6, so serve leaves the stuck pod's queue out at the
// first good read. Reused, the count was unknown for 15 s more, nothing
// left out, and the stuck pod's waiting counted as load after every
// Prometheus restart. A successful read keeps the cadence: at t+30s (15 s
// after it) the count is reused, stuck 1 with no query of it.
func TestStuckReadAgainAfterOutage(t *testing.T) {
	tg := Target{Name: "chat", Server: modelserver.VLLM, Selector: sel(t, `{namespace="llm"}`).Selector, Stuck: true}
	api := newSignalAPI(t, tg, Options{})
	api.values = map[Signal]float64{Running: 10, Waiting: 20, Reporting: 3, KV: 0.5, Stuck: 1, StuckWaiting: 6}
	refused := errors.New("dial tcp 127.0.0.1:9090: connect: connection refused")
	for _, s := range Signals() {
		api.fail[s] = refused
	}
	ev := &Evaluator{API: api}
	res, _ := ev.Evaluate(context.Background(), []Target{tg}, at)
	if r := res[0]; !math.IsNaN(r.Stuck) || ReasonOf(r.Errors[Stuck]) != ReasonUnavailable {
		t.Fatalf("t: stuck %v error %v, want unknown, unavailable", r.Stuck, r.Errors[Stuck])
	}
	clear(api.fail) // Prometheus is back
	res, _ = ev.Evaluate(context.Background(), []Target{tg}, at.Add(15*time.Second))
	if r := res[0]; r.Stuck != 1 || r.Errors[Stuck] != nil || r.Values[StuckWaiting] != 6 {
		t.Errorf("t+15s: stuck %v error %v stuck_waiting %v; want 1, none, 6 (read again after the refusal)", r.Stuck, r.Errors[Stuck], r.Values[StuckWaiting])
	}
	res, _ = ev.Evaluate(context.Background(), []Target{tg}, at.Add(30*time.Second))
	if r := res[0]; r.Stuck != 1 || r.Errors[Stuck] != nil {
		t.Errorf("t+30s: stuck %v error %v; want 1 reused, none", r.Stuck, r.Errors[Stuck])
	}
	if api.sent[Stuck] != 2 {
		t.Errorf("sent stuck %d, want 2 (t refused, t+15s)", api.sent[Stuck])
	}
}
