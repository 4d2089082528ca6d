package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/buftest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
)

// fakeRange answers the two range queries of Rebuilder from hand-written
// series: desired 3 from t=0 to t=135, raw 3 at t=0 and 1 from t=15.
type fakeRange struct {
	mu      sync.Mutex // the targets' rebuilds run concurrently
	queries []string
}

func (f *fakeRange) Instant(context.Context, string, time.Time) (model.Vector, []string, error) {
	return nil, nil, nil
}

func (f *fakeRange) Range(_ context.Context, q string, start, end time.Time, step time.Duration) (model.Matrix, []string, error) {
	f.mu.Lock()
	f.queries = append(f.queries, q)
	f.mu.Unlock()
	var vals []model.SamplePair
	for at := t0; !at.After(t0.Add(135 * time.Second)); at = at.Add(15 * time.Second) {
		v := 3.0
		if strings.Contains(q, "recommended") && at.After(t0) {
			v = 1
		}
		if at.Before(start) {
			continue
		}
		vals = append(vals, model.SamplePair{Timestamp: model.TimeFromUnixNano(at.UnixNano()), Value: model.SampleValue(v)})
	}
	return model.Matrix{{Metric: model.Metric{}, Values: vals}}, nil, nil
}

// TestRebuildFromPrometheus: a restart at t=150 without --state-dir rebuilds
// the window from infscale's own series and holds 3 for a full window of
// fresh observations after the restart (as TestRestartInDownWindow does
// with the state dir).
func TestRebuildFromPrometheus(t *testing.T) {
	api := &fakeRange{}
	rb := &Rebuilder{API: api, Step: 15 * time.Second}
	cfg, err := config.Parse([]byte(loopConfig), "loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Add(150 * time.Second)
	src := &fakeSource{}
	src.set("chat", load(3, 10, 0)) // raw ceil(10/24) = 1
	src.set("other", load(1, 5, 0))
	m := NewMetrics(prometheus.NewRegistry(), "test")
	l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 15 * time.Second, Now: func() time.Time { return now }, Rebuild: rb.Rebuild})
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if len(api.queries) != 4 || !slices.Contains(api.queries, `max(infscale_desired_replicas{target="chat"})`) {
		t.Errorf("queries %q", api.queries)
	}
	if got := desired(t, m, "chat"); got != 3 {
		t.Errorf("restored desired %v, want 3", got)
	}
	l.Cycle(context.Background())
	if got, r := desired(t, m, "chat"), lastRecord(l, "chat"); got != 3 || r.Reason != "ScaleDownStabilized" {
		t.Errorf("t=150: %v (%s), want 3 stabilized", got, r.Reason)
	}
	// The downtime is unknown: the restored 3 is recorded at the restart
	// (t=150) and holds for a full window, until t=450 (issue 13 item 4).
	now = t0.Add(315 * time.Second)
	l.Cycle(context.Background())
	if got := desired(t, m, "chat"); got != 3 {
		t.Errorf("t=315: %v, want 3", got)
	}
	now = t0.Add(450 * time.Second)
	l.Cycle(context.Background())
	if got := desired(t, m, "chat"); got != 1 {
		t.Errorf("t=450: %v, want 1", got)
	}
}

// zerosRange answers infscale_desired_replicas as 2 at t0 then 0 every
// 15 s to t0+60s, and infscale_recommended_replicas as 0.
type zerosRange struct{ fakeRange }

func (f *zerosRange) Range(_ context.Context, q string, start, end time.Time, step time.Duration) (model.Matrix, []string, error) {
	s := &model.SampleStream{}
	for i, v := range []float64{2, 0, 0, 0, 0} {
		if strings.Contains(q, "recommended") {
			v = 0
		}
		s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t0.Add(time.Duration(i) * 15 * time.Second).UnixNano()), Value: model.SampleValue(v)})
	}
	return model.Matrix{s}, nil, nil
}

// TestRebuildHeldZeroAt: a target of min 0 whose exported desired went 2
// -> 0 at t0+15s and stayed 0 to t0+60s was taken to zero by idle-to-zero,
// which needs held known 0: the rebuilt state dates HeldZeroAt at the
// trailing zeros' first sample, t0+15s, so an llm-d pool idle at zero past
// its lookback carries held 0 after a restart without --state-dir
// (carryHeldZero). With min 1 (never at zero by infscale) it stays unset.
func TestRebuildHeldZeroAt(t *testing.T) {
	rb := &Rebuilder{API: &zerosRange{}, Step: 15 * time.Second}
	for _, tc := range []struct {
		min  int
		want time.Time
	}{{0, t0.Add(15 * time.Second)}, {1, time.Time{}}} {
		zero := ""
		if tc.min == 0 {
			zero = "  zero: {flow_control: true}\n"
		}
		cfg, err := config.Parse(fmt.Appendf(nil, "prometheus: {url: http://127.0.0.1:1}\ntargets:\n- name: chat\n  server: epp\n  selector: '{service=\"chat-epp\"}'\n  metrics: [{type: queue, target: 24}]\n  minReplicaCount: %d\n  maxReplicaCount: 4\n%s", tc.min, zero), "z.yaml")
		if err != nil {
			t.Fatal(err)
		}
		p, err := rb.Rebuild(t.Context(), &cfg.Targets[0], t0.Add(75*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if p.Desired != 0 || !p.State.HeldZeroAt.Equal(tc.want) {
			t.Errorf("min %d: desired %d, held_zero_at %v; want 0 and %v", tc.min, p.Desired, p.State.HeldZeroAt, tc.want)
		}
	}
}

// TestRebuildPointsGarbage: what infscale never exported is skipped when
// its series are read back: NaN, ±Inf, a negative count and one above max
// int32 (no replica count); 2.6 rounds to 3.
func TestRebuildPointsGarbage(t *testing.T) {
	vals := []float64{math.NaN(), math.Inf(1), -1, 1e19, math.MaxInt32 + 1, 2.6, 4}
	var s model.SampleStream
	for i, v := range vals {
		s.Values = append(s.Values, model.SamplePair{Timestamp: model.Time(int64(i) * 1000), Value: model.SampleValue(v)})
	}
	got := points(model.Matrix{&s})
	if len(got) != 2 || got[0].v != 3 || got[1].v != 4 {
		t.Errorf("points %+v, want 3 and 4 only", got)
	}
}

// TestRebuildFailureCountedAsRead: no state dir and a Prometheus that
// answers 500 at startup. The failed rebuild is a failed read of
// Prometheus, counted once under its reason (unavailable), not under
// state_read, which means a state file refused (docs/metrics.md); the
// target starts fresh (no desired series before it decides).
func TestRebuildFailureCountedAsRead(t *testing.T) {
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	defer prom.Close()
	c, err := promql.NewClient(promql.ClientConfig{URL: prom.URL, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rb := &Rebuilder{API: c, Step: 15 * time.Second}
	cfg, err := config.Parse([]byte(loopConfig), "loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	m := NewMetrics(prometheus.NewRegistry(), "test")
	l := newLoop(t, LoopOptions{Source: &fakeSource{}, Metrics: m, Interval: 15 * time.Second,
		Now: func() time.Time { return t0 }, Rebuild: rb.Rebuild, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := l.SetConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"chat", "other"} {
		if got := queryErrors(m, name, "unavailable"); got != 1 {
			t.Errorf("%s: query_errors_total{reason=unavailable} = %v, want 1", name, got)
		}
		if got := queryErrors(m, name, "state_read"); got != 0 {
			t.Errorf("%s: query_errors_total{reason=state_read} = %v, want 0 (no state file)", name, got)
		}
		if hasDesired(m, name) {
			t.Errorf("%s: desired exported without a rebuild or a decision", name)
		}
	}
	if !strings.Contains(logs.String(), `level=WARN msg="state not rebuilt from Prometheus; starting fresh" target=chat`) {
		t.Errorf("log:\n%s\nwant the failed rebuild named at warn", logs.String())
	}
}

// TestRebuildUnreachableOneLine: Prometheus's port refuses connections at
// startup, so both targets' rebuilds fail on one cause: one WARN line names
// the first target of the config (chat), targets=2 and the cause without
// the query, with the refusal's hint; each target's failure is still
// counted (unavailable). It was
// a line per target (200 for 200 targets), each with the same error.
func TestRebuildUnreachableOneLine(t *testing.T) {
	prom := httptest.NewServer(http.NotFoundHandler())
	addr := prom.URL
	prom.Close() // nothing listens there now: connection refused
	c, err := promql.NewClient(promql.ClientConfig{URL: addr, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(loopConfig), "loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	m := NewMetrics(prometheus.NewRegistry(), "test")
	l := newLoop(t, LoopOptions{Source: &fakeSource{}, Metrics: m, Interval: 15 * time.Second,
		Now: func() time.Time { return t0 }, Rebuild: (&Rebuilder{API: c, Step: 15 * time.Second}).Rebuild, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := l.SetConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"chat", "other"} {
		if got := queryErrors(m, name, "unavailable"); got != 1 {
			t.Errorf("%s: query_errors_total{reason=unavailable} = %v, want 1", name, got)
		}
	}
	want := `level=WARN msg="state not rebuilt from Prometheus; starting fresh" target=chat targets=2 err="Post ` + addr + `: dial tcp ` + strings.TrimPrefix(addr, "http://") + `: connect: connection refused (nothing listens there: is Prometheus up? check the URL's host and port)"`
	if got := logs.String(); strings.Count(got, "state not rebuilt") != 1 || !strings.Contains(got, want) {
		t.Errorf("log:\n%s\nwant one line %s", got, want)
	}
}

// hangingRange is a Prometheus that accepts every range query and never
// answers: each returns when its context ends.
type hangingRange struct{ fakeRange }

func (*hangingRange) Range(ctx context.Context, _ string, _, _ time.Time, _ time.Duration) (model.Matrix, []string, error) {
	<-ctx.Done()
	return nil, nil, &promql.QueryError{Reason: promql.ReasonTimeout, Err: ctx.Err()}
}

// TestRebuildHangingParallel: Prometheus hangs at startup, the rebuild of
// each target is cut after its 10 s timeout. The targets' rebuilds ran one
// after another (N x 10 s before the first cycle: 1,000 targets waited
// 2.8 h); they run restoreParallel (8) at once: 4 targets take one round,
// 10 s (was 40 s), and 9 targets two rounds, 20 s (was 90 s). Each failure
// is counted once under timeout.
func TestRebuildHangingParallel(t *testing.T) {
	for _, c := range []struct {
		targets int
		want    time.Duration
	}{{4, 10 * time.Second}, {9, 20 * time.Second}} {
		synctest.Test(t, func(t *testing.T) {
			var b strings.Builder
			for i := range c.targets {
				fmt.Fprintf(&b, "- {name: t%d, selector: '{pod=\"t%d\"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 8}\n", i, i)
			}
			cfg, err := config.Parse([]byte("prometheus: {url: 'http://p:9090'}\ntargets:\n"+b.String()), "hang.yaml")
			if err != nil {
				t.Fatal(err)
			}
			rb := &Rebuilder{API: &hangingRange{}, Step: 15 * time.Second, Timeout: 10 * time.Second}
			m := NewMetrics(prometheus.NewRegistry(), "test")
			l := newLoop(t, LoopOptions{Source: &fakeSource{}, Metrics: m, Interval: 15 * time.Second, Rebuild: rb.Rebuild,
				Log: slog.New(slog.DiscardHandler)})
			start := time.Now()
			if err := l.SetConfig(t.Context(), cfg); err != nil {
				t.Fatal(err)
			}
			if got := time.Since(start); got != c.want {
				t.Errorf("%d targets: SetConfig took %v, want %v", c.targets, got, c.want)
			}
			for i := range c.targets {
				if got := queryErrors(m, fmt.Sprintf("t%d", i), "timeout"); got != 1 {
					t.Errorf("t%d: query_errors_total{reason=timeout} = %v, want 1", i, got)
				}
			}
		})
	}
}

// TestRebuildAnswerBound: serve's decision client's range queries (the
// rebuild) read one of its own series a chunk, so it refuses a range
// answer past MaxInstantAnswerBytes, not the 2 GiB a week's history may
// take: a source answering without end held 3.4 GB of
// RSS at serve's start. A range answer declaring 65 MiB fails the
// rebuild as too large before its body is read.
func TestRebuildAnswerBound(t *testing.T) {
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(65<<20))
		w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
	}))
	defer prom.Close()
	ps, err := NewPrometheusSourceFromRoundTripper(prom.URL, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(loopConfig), "loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rb := &Rebuilder{API: ps.Evaluator.API, Step: 15 * time.Second, Timeout: 5 * time.Second}
	_, err = rb.Rebuild(t.Context(), &cfg.Targets[0], time.Now())
	if !errors.Is(err, promql.ErrAnswerTooLarge) || !strings.Contains(err.Error(), "more than 64 MiB") {
		t.Errorf("rebuild from a 65 MiB range answer: %v; want refused as more than 64 MiB", err)
	}
}

// TestRefusedStateFileRebuilt: in Prometheus mode a state file that cannot
// be used is no saved state, so the window is rebuilt from infscale's own
// series, as when there is no file. chat.json is empty (a power loss after
// serve's unsynced rename: docs/recommend.md, "The state file"), other.json
// was saved 2 h ago (older than the 1 h maximum age). Both were "starting
// fresh" (no desired until a decision, windows empty) while a deleted file
// would have been rebuilt. Now each is logged as before (chat's counted
// under state_read) and rebuilt: desired 3 exported before the first cycle
// (fakeRange's series), held at t=150 against a raw 1.
func TestRefusedStateFileRebuilt(t *testing.T) {
	dir := t.TempDir()
	store, err := NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Add(150 * time.Second)
	store.Now = func() time.Time { return now }
	if err := os.WriteFile(filepath.Join(dir, "chat.json"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := store.Save("other", Persisted{Desired: 5, Current: 5, SavedAt: now.Add(-2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(loopConfig), "loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	src.set("chat", load(3, 10, 0)) // raw ceil(10/24) = 1
	src.set("other", load(3, 10, 0))
	var logs buftest.Buffer
	m := NewMetrics(prometheus.NewRegistry(), "test")
	rb := &Rebuilder{API: &fakeRange{}, Step: 15 * time.Second}
	l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 15 * time.Second, Now: func() time.Time { return now },
		Store: store, Rebuild: rb.Rebuild, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := l.SetConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"chat", "other"} {
		if !hasDesired(m, name) {
			t.Errorf("%s: no desired before the first cycle, want the rebuilt 3", name)
		} else if got := desired(t, m, name); got != 3 {
			t.Errorf("%s: restored desired %v, want the rebuilt 3", name, got)
		}
	}
	if got := queryErrors(m, "chat", "state_read"); got != 1 {
		t.Errorf("chat: state_read = %v, want 1 (the empty file)", got)
	}
	if got := queryErrors(m, "other", "state_read"); got != 0 {
		t.Errorf("other: state_read = %v, want 0 (too old is not a read error)", got)
	}
	for _, want := range []string{
		`level=ERROR msg="state file refused; rebuilding from Prometheus" target=chat`,
		`level=INFO msg="state file ignored; rebuilding from Prometheus" target=other`,
		`msg="state restored" target=chat from=prometheus desired=3`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log:\n%s\nwant %s", logs.String(), want)
		}
	}
	l.Cycle(t.Context())
	for _, name := range []string{"chat", "other"} {
		if got := desired(t, m, name); got != 3 {
			t.Errorf("t=150 %s: %v, want 3 held by the rebuilt window", name, got)
		}
	}
}
