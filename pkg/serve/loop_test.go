package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/recommend"
)

// fakeSource returns, for each target, the reading set by the test.
type fakeSource struct {
	mu       sync.Mutex
	readings map[string]Reading
	reads    int
}

func (f *fakeSource) Name() string { return "fake" }

func (f *fakeSource) set(target string, r Reading) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readings == nil {
		f.readings = map[string]Reading{}
	}
	f.readings[target] = r
}

func (f *fakeSource) Read(_ context.Context, targets []*config.Target, _ time.Time) []Reading {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	out := make([]Reading, len(targets))
	for i, t := range targets {
		r, ok := f.readings[t.Name]
		if !ok {
			r = Reading{Obs: unknownObservation()}
		}
		out[i] = r
	}
	return out
}

// load is a reading with running/waiting known and current known.
func load(current int, running, waiting float64) Reading {
	o := unknownObservation()
	o.Current, o.Reporting, o.Running, o.Waiting = current, current, running, waiting
	return Reading{Obs: o, CurrentKnown: true}
}

const loopConfig = `
targets:
- name: chat
  scrape: [http://127.0.0.1:1/metrics]
  metrics: [{type: queue, target: 24}]
  max: 8
- name: other
  scrape: [http://127.0.0.1:2/metrics]
  metrics: [{type: queue, target: 10}]
  max: 8
`

func newTestLoop(t *testing.T, src Source, store *Store) (*Loop, *Metrics) {
	t.Helper()
	cfg, err := config.Parse([]byte(loopConfig), "loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(prometheus.NewRegistry(), "test")
	l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 15 * time.Second, Store: store})
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return l, m
}

func desired(t *testing.T, m *Metrics, target string) float64 {
	t.Helper()
	v := math.NaN()
	m.table.mu.Lock()
	if tg, ok := m.table.targets[target]; ok {
		v = tg.desired
	}
	m.table.mu.Unlock()
	if math.IsNaN(v) {
		t.Fatalf("%s: no desired series", target)
	}
	return v
}

func lastRecord(l *Loop, target string) Record {
	rs := l.Recent()[target]
	if len(rs) == 0 {
		return Record{}
	}
	return rs[len(rs)-1]
}

// TestLoopScaleUpHoldDown runs the loop on a synctest clock: load arrives,
// drops, and the HPA's default 300 s scale-down window holds the value.
func TestLoopScaleUpHoldDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{}
		l, m := newTestLoop(t, src, nil)
		// queue 50 + 10 = 60 at 1 replica, target 24: ratio 60/24 = 2.5
		// outside the 10 % tolerance, ceil(60/24) = 3; the default scale-up
		// limit max(1+4, 2x1) = 5 per 15 s does not bind: desired 3.
		src.set("chat", load(1, 50, 10))
		// other: queue 5 at 1 replica, target 10: ratio 0.5, ceil(0.5) = 1 = min.
		src.set("other", load(1, 5, 0))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); _ = l.Run(ctx) }()
		synctest.Wait()
		if got := desired(t, m, "chat"); got != 3 {
			t.Fatalf("t=0: desired %v, want 3", got)
		}
		if got := desired(t, m, "other"); got != 1 {
			t.Errorf("other: desired %v, want 1", got)
		}
		if !l.Ready() {
			t.Error("not ready after a cycle with known signals")
		}
		// t=5s: the consumer followed; load falls to queue 10 at 3 replicas:
		// ceil(10/24) = 1, but the scale-down window keeps the highest
		// recommendation of the last 300 s (3 at t=0).
		time.Sleep(5 * time.Second)
		src.set("chat", load(3, 10, 0))
		time.Sleep(280 * time.Second) // t=285: cycles at 15, 30, ..., 285
		synctest.Wait()
		if got, r := desired(t, m, "chat"), lastRecord(l, "chat"); got != 3 || r.Reason != "ScaleDownStabilized" {
			t.Errorf("t=285: desired %v reason %s, want 3 held by stabilized", got, r.Reason)
		}
		// t=315: the t=0 recommendation left the window; the default
		// scale-down limit (100 % per 15 s) lets 3 -> 1 happen at once.
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if got := desired(t, m, "chat"); got != 1 {
			t.Errorf("t=315: desired %v, want 1", got)
		}
		// The first decision changed the current 1 to 3 (up); 3 -> 1 is
		// the one change down.
		if got := counterValue(t, m, "scale_changes_total", "chat", "up"); got != 1 {
			t.Errorf("up changes %v, want 1", got)
		}
		if got := counterValue(t, m, "scale_changes_total", "chat", "down"); got != 1 {
			t.Errorf("down changes %v, want 1", got)
		}
		if got := counterValue(t, m, "scale_reversals_total", "chat", ""); got != 0 {
			t.Errorf("reversals %v, want 0", got)
		}
		cancel()
		<-done
	})
}

// TestLoopNoDataHolds: when nothing is known the exported value holds (not
// NaN, not current), errors are counted, and recovery decides again.
func TestLoopNoDataHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{}
		l, m := newTestLoop(t, src, nil)
		l.now = time.Now
		src.set("chat", load(1, 50, 10)) // desired 3 (see TestLoopScaleUpHoldDown)
		src.set("other", load(1, 5, 0))
		l.Cycle(t.Context())
		// Prometheus down: no signal, no current; then current known (the
		// consumer is still at 1) but every signal unknown.
		fail := Reading{Obs: unknownObservation(), Errors: []ReadError{{Signal: "running", Reason: "unavailable"}, {Signal: "current", Reason: "unavailable"}}}
		src.set("chat", fail)
		time.Sleep(15 * time.Second)
		l.Cycle(t.Context())
		if got, r := desired(t, m, "chat"), lastRecord(l, "chat"); got != 3 || r.Reason != "no-data" || !r.Held {
			t.Errorf("outage: desired %v reason %s held %v, want 3 no-data held", got, r.Reason, r.Held)
		}
		lag := unknownObservation()
		lag.Current = 1
		src.set("chat", Reading{Obs: lag, CurrentKnown: true})
		time.Sleep(15 * time.Second)
		l.Cycle(t.Context())
		if got := desired(t, m, "chat"); got != 3 {
			t.Errorf("no data with current 1: desired %v, want the held 3 (never scale down on no data)", got)
		}
		if got := counterValue(t, m, "query_errors_total", "chat", "unavailable"); got != 2 {
			t.Errorf("unavailable errors %v, want 2 (running and current in one cycle)", got)
		}
		if n := tableCount(t, m, "infscale_queue_requests"); n != 1 {
			t.Errorf("queue series: %d, want 1 (other's only; chat's unknown queue is absent)", n)
		}
		// The other target was decided all along.
		if got := desired(t, m, "other"); got != 1 {
			t.Errorf("other: %v, want 1", got)
		}
		// Recovery: queue 100 at 3 replicas: ceil(100/24) = 5.
		src.set("chat", load(3, 90, 10))
		time.Sleep(15 * time.Second)
		l.Cycle(t.Context())
		if got := desired(t, m, "chat"); got != 5 {
			t.Errorf("recovery: desired %v, want ceil(100/24) = 5", got)
		}
	})
}

// TestLoopNoDecisionBeforeCurrent: nothing is exported for a target whose
// current replicas were never known.
func TestLoopNoDecisionBeforeCurrent(t *testing.T) {
	src := &fakeSource{}
	l, m := newTestLoop(t, src, nil)
	l.Cycle(t.Context())
	if n := tableCount(t, m, "infscale_desired_replicas"); n != 0 {
		t.Errorf("%d desired series before any current is known, want 0", n)
	}
	// Nor a current_replicas series: no count was read, and 0 would read as
	// a target scaled to zero.
	if n := tableCount(t, m, "infscale_current_replicas"); n != 0 {
		t.Errorf("%d current_replicas series before any current is known, want 0", n)
	}
	if l.Ready() {
		t.Error("ready without any decision")
	}
}

// TestRestartInDownWindow: a restart 150 s into the 300 s scale-down window
// does not scale down early when --state-dir carries the state. The time
// the process was down is unknown (issue 13 item 4), so the restored value
// is recorded at the restart (recommend.Resume): no scale-down below the
// held 3 until a full window of fresh observations, t=150+300. The state
// buys the held value before the first cycle and the window's content; a
// fresh process without state records the current 3 at t=150 (the HPA's
// recordInitialRecommendation) and holds as long.
func TestRestartInDownWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		store, err := NewStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		src := &fakeSource{}
		l1, m1 := newTestLoop(t, src, store)
		src.set("chat", load(1, 50, 10)) // desired 3 at t=0
		src.set("other", load(1, 5, 0))
		l1.Cycle(t.Context())
		time.Sleep(15 * time.Second)
		src.set("chat", load(3, 10, 0)) // raw 1 from t=15, held at 3
		l1.Cycle(t.Context())
		if got := desired(t, m1, "chat"); got != 3 {
			t.Fatalf("before restart: %v, want 3", got)
		}
		// Restart at t=150: a new loop (new process) on the same state dir.
		time.Sleep(135 * time.Second)
		l2, m2 := newTestLoop(t, src, store)
		if got := desired(t, m2, "chat"); got != 3 {
			t.Errorf("restored desired before the first cycle: %v, want 3", got)
		}
		l2.Cycle(t.Context())
		if got, r := desired(t, m2, "chat"), lastRecord(l2, "chat"); got != 3 || r.Reason != "ScaleDownStabilized" {
			t.Errorf("after restart at t=150: desired %v (%s), want 3 stabilized", got, r.Reason)
		}
		l3, m3 := newTestLoop(t, src, nil)
		l3.Cycle(t.Context())
		if got, r := desired(t, m3, "chat"), lastRecord(l3, "chat"); got != 3 || r.Reason != "ScaleDownStabilized" {
			t.Errorf("fresh loop: %v (%s), want 3 stabilized (the initial recommendation)", got, r.Reason)
		}
		// t=315: the pre-restart entries left the window, but the downtime
		// (15, 150] was not observed: the 3 recorded at t=150 holds.
		time.Sleep(165 * time.Second)
		l2.Cycle(t.Context())
		if got := desired(t, m2, "chat"); got != 3 {
			t.Errorf("t=315 after restart: %v, want 3 (held until t=450)", got)
		}
		// t=450: a full window (150, 450] of fresh observations, all raw 1.
		time.Sleep(135 * time.Second)
		l2.Cycle(t.Context())
		if got := desired(t, m2, "chat"); got != 1 {
			t.Errorf("t=450 after restart: %v, want 1", got)
		}
		l3.Cycle(t.Context())
		if got := desired(t, m3, "chat"); got != 1 {
			t.Errorf("fresh loop at t=450: %v, want 1", got)
		}
	})
}

// TestStoreRoundTrip: the state file is JSON and rejects garbage.
func TestStoreRoundTrip(t *testing.T) {
	s, err := NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Now = func() time.Time { return t0.Add(time.Minute) }
	st := recommend.State{Recommendations: []recommend.TimedReplicas{{At: t0, Replicas: 3}}, LastDesired: 3, LastAt: t0}
	if err := s.Save("chat", Persisted{Desired: 3, Current: 2, State: st, SavedAt: t0}); err != nil {
		t.Fatal(err)
	}
	p, err := s.Load("chat")
	if err != nil || p == nil {
		t.Fatalf("load: %v %v", p, err)
	}
	if p.Desired != 3 || p.Current != 2 || len(p.State.Recommendations) != 1 || !p.State.LastAt.Equal(t0) {
		t.Errorf("round trip: %+v", p)
	}
	s.Now = func() time.Time { return t0.Add(2 * time.Hour) }
	if p, err := s.Load("chat"); p != nil || !errors.Is(err, ErrStateTooOld) {
		t.Errorf("a 2 h old state must be ignored (MaxAge 1 h) with ErrStateTooOld, got %v %v", p, err)
	}
	if p, err := s.Load("missing"); p != nil || err != nil {
		t.Errorf("missing: %v %v", p, err)
	}
}

// TestReloadKeepsState: a reload keeps a target's state and drops removed
// targets' series; an invalid policy is refused with the old config kept.
func TestReloadKeepsState(t *testing.T) {
	src := &fakeSource{}
	l, m := newTestLoop(t, src, nil)
	l.now = func() time.Time { return t0 }
	src.set("chat", load(1, 50, 10))
	src.set("other", load(1, 5, 0))
	l.Cycle(t.Context())
	cfg, err := config.Parse([]byte(strings.Replace(loopConfig, "- name: other\n  scrape: [http://127.0.0.1:2/metrics]\n  metrics: [{type: queue, target: 10}]\n  max: 8\n", "", 1)), "reload.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if n := tableCount(t, m, "infscale_desired_replicas"); n != 1 {
		t.Errorf("%d desired series after dropping a target, want 1", n)
	}
	if len(l.Recent()["chat"]) != 1 {
		t.Error("chat's decisions were lost by the reload")
	}
}

// TestOutageLongerThanWindow: an outage of 400 s (longer than the 300 s
// scale-down window) holds 3 and counts as 3 in the window. The first
// reading after it is partial: 1 of the 3 pods answers (queue 10). Without
// a replicas query the current count is the last desired, 3, so 2 pods are
// missing and the HPA's rule assumes them at the target when the reporting
// pod says scale down: (10 + 2 x 24) / (24 x 3) = 0.81, ceil(58 / 24) = 3.
// Once all 3 report (queue 10: raw 1), 3 still holds for a window after
// the last 3 (t=405), then 1.
func TestOutageLongerThanWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{}
		l, m := newTestLoop(t, src, nil)
		src.set("chat", load(1, 50, 10)) // desired 3
		src.set("other", load(1, 5, 0))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); _ = l.Run(ctx) }()
		synctest.Wait()
		time.Sleep(time.Second)
		src.set("chat", Reading{Obs: unknownObservation(), Errors: []ReadError{{Signal: "running", Reason: "unavailable"}}})
		time.Sleep(400 * time.Second) // outage: cycles at 15 .. 390 hold 3
		src.set("chat", load(1, 10, 0))
		time.Sleep(15 * time.Second) // t=416: the cycle at 405 read 1 pod of 3
		synctest.Wait()
		if got := desired(t, m, "chat"); got != 3 {
			t.Errorf("partial reading after the outage: desired %v, want 3 (2 pods missing)", got)
		}
		if n := len(l.targets[0].run.State.Recommendations); n > 25 {
			t.Errorf("%d recommendations kept, want a window's worth (about 21 at 15 s)", n)
		}
		src.set("chat", load(3, 10, 0))
		time.Sleep(275 * time.Second) // t=691: cycles to 690 still see the 3 of t=405
		synctest.Wait()
		if got := desired(t, m, "chat"); got != 3 {
			t.Errorf("t=691: desired %v, want 3 (window)", got)
		}
		time.Sleep(30 * time.Second) // t=721: the cycle at 705 is past the window
		synctest.Wait()
		if got := desired(t, m, "chat"); got != 1 {
			t.Errorf("t=721: desired %v, want 1", got)
		}
		cancel()
		<-done
	})
}

// TestAuditLog: one JSON line per decision, with the record's fields.
func TestAuditLog(t *testing.T) {
	src := &fakeSource{}
	l, _ := newTestLoop(t, src, nil)
	var buf strings.Builder
	l.audit = &buf
	l.now = func() time.Time { return t0 }
	src.set("chat", load(1, 50, 10))
	src.set("other", load(1, 5, 0))
	l.Cycle(t.Context())
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d audit lines, want 2 (one per target):\n%s", len(lines), buf.String())
	}
	var r Record
	if err := json.Unmarshal([]byte(lines[0]), &r); err != nil {
		t.Fatal(err)
	}
	// chat: queue 60 / 24 = 2.5 -> 3 (TestLoopScaleUpHoldDown).
	if r.Target != "chat" || r.Desired != 3 || r.Reason != "DesiredWithinRange" || *r.Signals.Queue != 60 || !r.At.Equal(t0) || len(r.Steps) == 0 {
		t.Errorf("audit record %+v", r)
	}
}

// remember keeps the newest maxRecent (5) decisions, oldest first, only the
// newest with its steps.
func TestRememberKeepsNewestFive(t *testing.T) {
	var tg target
	for i := range 8 {
		tg.remember(Record{Desired: i, Steps: []recommend.Step{{}}})
		// After records 0..i: the last min(i+1, 5) of them, oldest first.
		recs := tg.records()
		if want := min(i+1, 5); len(recs) != want || recs[0].Desired != i+1-want || recs[want-1].Desired != i {
			t.Fatalf("after %d records: %d kept, from %d to %d", i+1, len(recs), recs[0].Desired, recs[len(recs)-1].Desired)
		}
	}
	// Records 0..7 went in: 3..7 remain.
	recs := tg.records()
	if len(recs) != 5 {
		t.Fatalf("%d records, want 5", len(recs))
	}
	for i, r := range recs {
		if r.Desired != 3+i {
			t.Errorf("recent[%d] desired %d, want %d", i, r.Desired, 3+i)
		}
		if keep := i == 4; (r.Steps != nil) != keep {
			t.Errorf("recent[%d] steps %v", i, r.Steps)
		}
	}
}

// Without an audit log the cycle leaves the steps' words out
// (recommend.Decider.Quiet) and /debug/decisions writes the newest decision's
// steps when asked: what it shows is byte for byte what a loop that wrote
// them every cycle (one with an audit log) shows, through load changes,
// a scale to zero, failed reads and a reload.
func TestLoopQuietStepsSame(t *testing.T) {
	fake := &promAnswers{}
	srv := fake.serve(t)
	loud, _, nowLoud := promLoop(t, srv, zeroConfig, 1, nil)
	var audit bytes.Buffer
	loud.audit = &audit
	quiet, _, nowQuiet := promLoop(t, srv, zeroConfig, 1, nil)
	phases := [][]promRule{
		vllmRules("1", "30", "10"),
		vllmRules("3", "2", "0"),
		vllmRules("2", "0", "0", promRule{needle: "held_requests", values: []string{"0"}}),
		vllmRules("2", "5", "1", promRule{needle: "num_requests_waiting", status: 500}),
		vllmRules("0", "0", "0", promRule{needle: "held_requests", values: []string{"4"}}),
	}
	for i := range 40 {
		fake.set(phases[i/8]...)
		if i == 20 { // a reload keeps the state and the recent decisions
			cfg, err := config.Parse([]byte(fmt.Sprintf(zeroConfig, srv.URL)), "faults.yaml")
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range []*Loop{loud, quiet} {
				if err := l.SetConfig(context.Background(), cfg); err != nil {
					t.Fatal(err)
				}
			}
		}
		loud.Cycle(context.Background())
		quiet.Cycle(context.Background())
		a, _ := json.Marshal(loud.Recent())
		b, _ := json.Marshal(quiet.Recent())
		if !bytes.Equal(a, b) {
			t.Fatalf("cycle %d: /debug/decisions\n%s\nwith the steps written every cycle\n%s", i, b, a)
		}
		if !bytes.Contains(b, []byte(`"steps":[{`)) {
			t.Fatalf("cycle %d: no steps in %s", i, b)
		}
		*nowLoud = nowLoud.Add(15 * time.Second)
		*nowQuiet = *nowLoud
	}
}

// A target keeps its older decisions compact: read back, every field of
// every Record (all of them set here, each signal a different value) is
// what went in, the newest with its raw results and steps; a field added to
// Record or Signals must be kept too.
func TestRememberKeepsEveryField(t *testing.T) {
	// Role is the target's own (records sets it) and Pair, as Raw and
	// Steps, the newest decision's only (TestPairEmbedded reads both).
	if n := reflect.TypeFor[Record]().NumField(); n != 19 {
		t.Fatalf("Record has %d fields: keep the new ones in pastRecord", n)
	}
	if n := reflect.TypeFor[Signals]().NumField(); n != signalFields {
		t.Fatalf("Signals has %d fields, signalFields %d", n, signalFields)
	}
	full := func(i int) Record {
		r := Record{Target: "chat", At: t0.Add(time.Duration(i) * time.Second), Desired: 3 + i, Current: 2 + i,
			Observed: ptr(1 + i), Reason: "metric", Held: i%2 == 0, Errors: []string{"kv: timeout: x"}, Warnings: []string{"partial response"},
			Stuck: ptr(i), StuckReplicas: []string{"http://p1"}, Applied: ptr(4 + i), ApplyError: "refused", ApplySkipped: "not the leader",
			Raw:   recommend.RawResults{{Signal: recommend.SignalQueue, Value: 60, Target: 24, Replicas: 3, Desired: 3, Valid: true}},
			Steps: []recommend.Step{{Reason: recommend.ReasonMetric, Value: 3, Text: "queue 60 / target 24"}}}
		v := reflect.ValueOf(&r.Signals).Elem()
		for k := range v.NumField() {
			x := float64(k) + 0.5 + float64(i)
			v.Field(k).Set(reflect.ValueOf(&x))
		}
		return r
	}
	var tg target
	tg.cfg.Name = "chat"
	for i := range 7 {
		tg.remember(full(i))
	}
	got := tg.records()
	for k, r := range got {
		want := full(2 + k)
		if k < len(got)-1 {
			want.Raw, want.Steps = nil, nil
		}
		a, _ := json.Marshal(r)
		b, _ := json.Marshal(want)
		if !bytes.Equal(a, b) {
			t.Errorf("record %d:\n%s\nwant\n%s", k, a, b)
		}
	}
	// Unknown pointers stay unknown.
	var empty target
	empty.remember(Record{Target: "x", Reason: "no-data"})
	if r := empty.records()[0]; r.Observed != nil || r.Stuck != nil || r.Applied != nil || r.Signals != (Signals{}) {
		t.Errorf("empty record read back as %+v", r)
	}
}

func ptr[T any](v T) *T { return &v }

// blockingSource blocks each read until its context ends, then reports
// the read as failed with the context's error (a hung API server).
type blockingSource struct{ reads chan struct{} }

func (b *blockingSource) Name() string { return "fake" }

func (b *blockingSource) Read(ctx context.Context, targets []*config.Target, _ time.Time) []Reading {
	b.reads <- struct{}{}
	<-ctx.Done()
	out := make([]Reading, len(targets))
	for i := range out {
		out[i] = Reading{Obs: unknownObservation(), Errors: []ReadError{{Signal: "current", Reason: "unavailable", Err: ctx.Err()}}}
	}
	return out
}

// A stop (ctx cancelled) during a cycle's reads ends the cycle without
// counting the cut reads as errors; a read the interval bounds is one.
func TestCycleStopIsNotAReadError(t *testing.T) {
	src := &blockingSource{reads: make(chan struct{}, 2)}
	l, m := newTestLoop(t, src, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-src.reads; cancel() }()
	l.Cycle(ctx)
	if got := queryErrors(m, "chat", "unavailable"); got != 0 {
		t.Errorf("stop counted %v read errors, want 0", got)
	}
	l.SetInterval(20 * time.Millisecond)
	l.Cycle(context.Background())
	if got := queryErrors(m, "chat", "unavailable"); got != 1 {
		t.Errorf("interval-bounded read counted %v errors, want 1", got)
	}
}

// newLoop is NewLoop, failing tb on an error.
func newLoop(tb testing.TB, o LoopOptions) *Loop {
	tb.Helper()
	l, err := NewLoop(o)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// TestRecentEmptyList: /debug/decisions is {target: [record, ...]}
// (docs/serve.md); a target with no decision yet (before the first cycle,
// or every read unknown from the start with nothing to hold) is an empty
// list, not null (`jq '.chat | length'` failed on null).
func TestRecentEmptyList(t *testing.T) {
	src := &fakeSource{}
	l, _ := newTestLoop(t, src, nil)
	if b, _ := json.Marshal(l.Recent()); string(b) != `{"chat":[],"other":[]}` {
		t.Errorf("before the first cycle: %s, want {\"chat\":[],\"other\":[]}", b)
	}
	src.set("chat", load(1, 30, 0))
	l.Cycle(context.Background())
	rec := l.Recent()
	if len(rec["chat"]) != 1 || rec["other"] == nil || len(rec["other"]) != 0 {
		t.Errorf("after a cycle with other unknown: chat %d records, other %v (nil %v); want 1 and an empty list", len(rec["chat"]), rec["other"], rec["other"] == nil)
	}
}
