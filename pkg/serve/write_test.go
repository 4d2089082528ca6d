package serve

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/pkg/config"
)

// hangingWrites is a Writer and CostWriter whose calls of one kind
// ("write" or "costs") for one target hang until their context ends (an API server that accepts and never
// answers); the other targets' calls succeed once the hanging one has
// started, and record whether it was still hanging then.
type hangingWrites struct {
	hang    string        // the target
	kind    string        // its hanging call
	started chan struct{} // closed when the hanging call has started
	once    sync.Once
	done    atomic.Bool // the hanging call has returned

	mu sync.Mutex
	// calledAt and deadline are the hanging call's start and its context's
	// deadline.
	calledAt, deadline time.Time
	// landed are the other targets' calls ("write b 3", "costs b"), and
	// overlapped those made while the hanging one was still hanging.
	landed, overlapped []string
}

func newHangingWrites(target, kind string) *hangingWrites {
	return &hangingWrites{hang: target, kind: kind, started: make(chan struct{})}
}

func (h *hangingWrites) call(ctx context.Context, target, kind, what string) error {
	if target == h.hang && kind == h.kind {
		dl, _ := ctx.Deadline()
		h.mu.Lock()
		h.calledAt, h.deadline = time.Now(), dl
		h.mu.Unlock()
		h.once.Do(func() { close(h.started) })
		<-ctx.Done()
		h.done.Store(true)
		return ctx.Err()
	}
	select { // a serial loop never gets here while the hanging call runs
	case <-h.started:
	case <-time.After(10 * time.Second):
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.landed = append(h.landed, what)
	if !h.done.Load() {
		h.overlapped = append(h.overlapped, what)
	}
	return nil
}

func (h *hangingWrites) Write(ctx context.Context, t *config.Target, desired int) (bool, error) {
	err := h.call(ctx, t.Name, "write", "write "+t.Name+" "+strconv.Itoa(desired))
	return err == nil, err
}

func (h *hangingWrites) SetDeletionCosts(ctx context.Context, t *config.Target, _ map[string]float64) (int, int, error) {
	if err := h.call(ctx, t.Name, "costs", "costs "+t.Name); err != nil {
		return 0, 0, err
	}
	return 1, 0, nil
}

// writeConfig has three apply: true targets, each on its own Deployment.
const writeConfig = `namespace: llm
targets:
- name: a
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: a}
  scrape: {port: http}
  apply: true
  pod_deletion_cost: true
  metrics: [{type: queue, target: 24}]
  behavior: {scaleDown: {stabilizationWindowSeconds: 0}}
  guard: {off: true}
  max: 8
- name: b
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: b}
  scrape: {port: http}
  apply: true
  pod_deletion_cost: true
  metrics: [{type: queue, target: 24}]
  behavior: {scaleDown: {stabilizationWindowSeconds: 0}}
  guard: {off: true}
  max: 8
- name: c
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: c}
  scrape: {port: http}
  apply: true
  pod_deletion_cost: true
  metrics: [{type: queue, target: 24}]
  behavior: {scaleDown: {stabilizationWindowSeconds: 0}}
  guard: {off: true}
  max: 8
`

// writeLoop is a loop over writeConfig whose writes go to w, two at once,
// each cut after timeout; its log is returned.
func writeLoop(t *testing.T, src Source, w *hangingWrites, timeout time.Duration) (*Loop, *Metrics, *strings.Builder, *[]Record) {
	t.Helper()
	cfg, err := config.Parse([]byte(writeConfig), "write.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	var recs []Record
	m := NewMetrics(prometheus.NewRegistry(), "test")
	l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: time.Minute, Writer: w, Costs: w,
		WriteWorkers: 2, WriteTimeout: timeout, Log: slog.New(slog.NewTextHandler(&logs, nil)),
		OnDecision: func(r Record) { recs = append(recs, r) }})
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return l, m, &logs, &recs
}

// TestHangingWriteDoesNotHoldOthers: target a's scale write hangs; b's and
// c's land while it hangs, and a's is cut at its own deadline (200 ms, not
// the one-minute cycle), counted as a timeout, logged and said in a's
// record.
func TestHangingWriteDoesNotHoldOthers(t *testing.T) {
	const timeout = 200 * time.Millisecond
	src := &fakeSource{}
	// queue 60 at 1 replica, target 24: ceil(60/24) = 3, a scale-up (no
	// deletion costs), written since 3 differs from the 1 read.
	for _, n := range []string{"a", "b", "c"} {
		src.set(n, load(1, 50, 10))
	}
	w := newHangingWrites("a", "write")
	l, m, logs, recs := writeLoop(t, src, w, timeout)
	start := time.Now()
	l.Cycle(context.Background())
	if took := time.Since(start); took >= 30*time.Second {
		t.Fatalf("cycle took %v: the hanging write held it", took)
	}

	w.mu.Lock()
	landed, overlapped, calledAt, deadline := w.landed, w.overlapped, w.calledAt, w.deadline
	w.mu.Unlock()
	want := []string{"write b 3", "write c 3"}
	if !sameSet(landed, want) || !sameSet(overlapped, want) {
		t.Errorf("writes landed %q, while a hung %q; want both %q", landed, overlapped, want)
	}
	if d := deadline.Sub(calledAt); deadline.IsZero() || d <= 0 || d > timeout {
		t.Errorf("a's write deadline %v after its call, want within the write timeout %v", d, timeout)
	}
	if got := counterValue(t, m, "apply_errors_total", "a", "timeout"); got != 1 {
		t.Errorf("apply_errors_total{a, timeout} = %v, want 1", got)
	}
	for _, n := range []string{"b", "c"} {
		if got := counterValue(t, m, "apply_errors_total", n, "timeout"); got != 0 {
			t.Errorf("apply_errors_total{%s, timeout} = %v, want 0", n, got)
		}
	}
	if !strings.Contains(logs.String(), `msg="replicas not applied" target=a desired=3 reason=timeout`) {
		t.Errorf("a's timeout not logged:\n%s", logs.String())
	}
	// The records (OnDecision, in target order, and /debug/decisions) say
	// what was written.
	if len(*recs) != 3 {
		t.Fatalf("%d decisions, want 3", len(*recs))
	}
	for i, n := range []string{"a", "b", "c"} {
		for _, r := range []Record{(*recs)[i], lastRecord(l, n)} {
			if r.Target != n {
				t.Fatalf("record %d is %s's, want %s's", i, r.Target, n)
			}
			if n == "a" {
				if r.Applied != nil || !strings.Contains(r.ApplyError, context.DeadlineExceeded.Error()) {
					t.Errorf("a: applied %v, apply_error %q; want none and a deadline error", r.Applied, r.ApplyError)
				}
				continue
			}
			if r.Applied == nil || *r.Applied != 3 || r.ApplyError != "" {
				t.Errorf("%s: applied %v, apply_error %q; want 3", n, r.Applied, r.ApplyError)
			}
		}
	}
}

// TestHangingCostsDoNotHoldOthers: a scale-down sets deletion costs first;
// a's patch hangs and is cut at its deadline (logged), a's own scale write
// still follows it, and b's and c's patches and writes land meanwhile.
func TestHangingCostsDoNotHoldOthers(t *testing.T) {
	const timeout = 200 * time.Millisecond
	src := &fakeSource{}
	// queue 10 at 4 replicas, target 24: ceil(10/24) = 1 < 4, a scale-down
	// (window 0): deletion costs, then the write of 1.
	for _, n := range []string{"a", "b", "c"} {
		r := load(4, 10, 0)
		r.Outstanding = map[string]float64{n + "-0": 10, n + "-1": 0, n + "-2": 0, n + "-3": 0}
		src.set(n, r)
	}
	w := newHangingWrites("a", "costs")
	l, _, logs, _ := writeLoop(t, src, w, timeout)
	l.Cycle(context.Background())

	w.mu.Lock()
	landed, overlapped := w.landed, w.overlapped
	w.mu.Unlock()
	// a's write comes after its costs were cut: it is the only call not
	// made while a's patch hung.
	if want := []string{"costs b", "write b 1", "costs c", "write c 1", "write a 1"}; !sameSet(landed, want) {
		t.Errorf("calls landed %q, want %q", landed, want)
	}
	if want := []string{"costs b", "write b 1", "costs c", "write c 1"}; !sameSet(overlapped, want) {
		t.Errorf("calls made while a's patch hung %q, want %q", overlapped, want)
	}
	if !strings.Contains(logs.String(), `msg="pod deletion costs not all set" target=a set=0 err="context deadline exceeded"`) {
		t.Errorf("a's cost timeout not logged:\n%s", logs.String())
	}
	if r := lastRecord(l, "a"); r.Applied == nil || *r.Applied != 1 {
		t.Errorf("a: applied %v, want 1 after its costs timed out", r.Applied)
	}
}

// TestNewLoopValidates: NewLoop refuses missing and negative options,
// naming the field.
func TestNewLoopValidates(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry(), "test")
	src := &fakeSource{}
	for _, tc := range []struct {
		o    LoopOptions
		want string
	}{
		{LoopOptions{Metrics: m, Interval: time.Second}, "Source is required"},
		{LoopOptions{Source: src, Interval: time.Second}, "Metrics is required"},
		{LoopOptions{Source: src, Metrics: m}, "Interval must be positive, got 0s"},
		{LoopOptions{Source: src, Metrics: m, Interval: time.Second, WriteWorkers: -1}, "WriteWorkers must not be negative, got -1"},
		{LoopOptions{Source: src, Metrics: m, Interval: time.Second, WriteTimeout: -time.Second}, "WriteTimeout must not be negative, got -1s"},
	} {
		_, err := NewLoop(tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewLoop(%+v) = %v, want an error containing %q", tc.o, err, tc.want)
		}
	}
	if _, err := NewLoop(LoopOptions{Source: src, Metrics: m, Interval: time.Second}); err != nil {
		t.Errorf("NewLoop with the required options: %v", err)
	}
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	n := map[string]int{}
	for _, s := range a {
		n[s]++
	}
	for _, s := range b {
		n[s]--
	}
	for _, v := range n {
		if v != 0 {
			return false
		}
	}
	return true
}
