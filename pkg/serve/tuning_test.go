package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/buftest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/tune"
)

// tuneTarget is a config of one target, chat (scraped, queue 24, the
// reference replica, max 8), with the tune: block given in flow style.
func tuneTarget(t *testing.T, block string) *config.File {
	t.Helper()
	f, err := config.Parse([]byte(`
targets:
- name: chat
  scrape: [http://127.0.0.1:1/metrics]
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  max: 8
  tune: `+block+"\n"), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestTuningDirResults: a target whose tune: block points at a directory
// of results (what `infscale tune --shard` writes) takes its candidate
// from there. With 2 replicas running 40 requests, the configured queue
// target 24 keeps 2 (the HPA's ceil(2 x 20/24) = 2) while the candidate
// queue:8,min=2 asks for ceil(2 x 20/8) = 5 (within the HPA's default
// scale-up limit of 4 pods or 100% per 15 s): shadow exports 5 beside 2.
// Adopted (it holds), the target decides 5 itself, with one audit line;
// a newer result that does not hold is rejected and the adopted one
// stays.
func TestTuningDirResults(t *testing.T) {
	dir := t.TempDir()
	yaml := func(mode string) *config.File {
		return tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q, mode: %s}", dir, mode))
	}
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	src := &fakeSource{}
	src.set("chat", load(2, 40, 0))
	reg := prometheus.NewRegistry()
	var audit bytes.Buffer
	l := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: clock, Audit: &audit})
	tn := NewTuning(reg)
	tn.Now = clock
	l.SetTuning(tn)
	if err := l.SetConfig(context.Background(), yaml("shadow")); err != nil {
		t.Fatal(err)
	}
	write := func(holds bool, at time.Time) tune.TargetResult {
		c := tune.Candidate{Metric: "queue", Target: 8, Options: []tune.Option{{Name: "min", Value: 2, Default: 1, Key: "minReplicaCount"}}}
		r := tune.TargetResult{Target: "chat", At: at, Policy: c.Policy(), Candidate: c, Outcome: tune.Outcome{Holds: holds, MaxMissPct: 0.1}}
		if err := tune.WriteResult(dir, r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	ctx := context.Background()
	tn.Step(ctx) // no file yet
	if s, _ := tuneState(tn, "chat"); s != "" {
		t.Fatalf("state %q without a result", s)
	}
	write(true, now)
	tn.Step(ctx)
	l.Cycle(ctx)
	g := gatherer(l.metrics, reg)
	if v, ok := gauge(t, g, "infscale_candidate_desired_replicas", map[string]string{"target": "chat"}); !ok || v != 5 {
		t.Errorf("candidate %v (%v), want 5", v, ok)
	}
	if d := desired(t, l.metrics, "chat"); d != 2 {
		t.Errorf("live %v in shadow mode, want 2", d)
	}
	if v, ok := gauge(t, g, "infscale_tuned_policy_info", map[string]string{"policy": "queue:8,min=2", "state": "shadow"}); !ok || v != 1 {
		t.Errorf("info %v %v", v, ok)
	}

	if err := l.SetConfig(context.Background(), yaml("adopt")); err != nil {
		t.Fatal(err)
	}
	now = now.Add(15 * time.Second)
	l.Cycle(ctx)
	if d := desired(t, l.metrics, "chat"); d != 5 {
		t.Errorf("live %v after adopting queue:8,min=2, want 5", d)
	}
	now = now.Add(time.Minute)
	write(false, now)
	tn.Step(ctx)
	if s, p := tuneState(tn, "chat"); s != TuneStateRejected || p != "queue:8,min=2" {
		t.Errorf("a result that does not hold: %q %q, want rejected", s, p)
	}
	now = now.Add(15 * time.Second)
	l.Cycle(ctx)
	if d := desired(t, l.metrics, "chat"); d != 5 {
		t.Errorf("live %v, want the adopted policy's 5 still", d)
	}
	if n := strings.Count(audit.String(), `"tune":{"event":"adopted","policy":"queue:8,min=2","from":"configured"`); n != 1 {
		t.Errorf("%d adopt lines, want 1:\n%s", n, audit.String())
	}
}

// TestTuningBesideCycles: the tuning goroutine (Run, reading tune.dir
// every millisecond) and decision cycles run at once without a data race
// (go test -race); afterwards the candidate is the file's.
func TestTuningBesideCycles(t *testing.T) {
	dir := t.TempDir()
	f := tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q, mode: adopt}", dir))
	c := tune.Candidate{Metric: "queue", Target: 8}
	if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: time.Now(), Policy: c.Policy(), Candidate: c, Outcome: tune.Outcome{Holds: true, MaxMissPct: 0.1}}); err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	src.set("chat", load(2, 40, 0))
	reg := prometheus.NewRegistry()
	var audit bytes.Buffer
	l := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Audit: &audit})
	tn := NewTuning(reg)
	tn.Tick = time.Millisecond
	l.SetTuning(tn)
	if err := l.SetConfig(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tn.Run(ctx) }()
	for range 50 {
		l.Cycle(context.Background())
	}
	cancel()
	<-done
	tn.Step(context.Background())
	l.Cycle(context.Background())
	if s, p := tuneState(tn, "chat"); s != TuneStateAdopted || p != "queue:8" {
		t.Errorf("state %q %q, want adopted queue:8", s, p)
	}
	if v, ok := gauge(t, gatherer(l.metrics, reg), "infscale_candidate_desired_replicas", map[string]string{"target": "chat"}); !ok || v != 5 {
		t.Errorf("candidate %v %v, want 5 (ceil(2 x 20/8))", v, ok)
	}
}

// TestTuningFailureSaysRetry: a failed run (here an unreadable result file
// in tune.dir) is logged with when it is tried again. A dir: target's file
// is looked at every Step (Tick, default a minute), so the retry is the
// next Step, 1m0s: the log said 15m0s (tuneRetry, an in-process run's)
// while the next Step read the file again. The same failure is logged
// at error once an hour (failRepeat), another one at once. (In process, every 1h,
// the retry is tuneRetry: TestTuningRetry... covers Step's timing.)
func TestTuningFailureSaysRetry(t *testing.T) {
	dir := t.TempDir()
	f := tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q}", dir))
	if err := os.WriteFile(filepath.Join(dir, "chat.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	tn, _, log := tuningAt(t, f, func() time.Time { return now }, nil)
	tn.Step(context.Background())
	if !strings.Contains(log.String(), `msg="tuning failed; the target keeps its policy" target=chat`) || !strings.Contains(log.String(), "retry_in=1m0s") {
		t.Errorf("log %q: want the failure with retry_in=1m0s", log.String())
	}
	// The file is read again at each Step; the same failure is not said
	// again at error for an hour (it was once a line a minute).
	const loud = "tuning failed; the target keeps its policy"
	for range 59 {
		now = now.Add(time.Minute)
		tn.Step(context.Background())
	}
	if n := strings.Count(log.String(), loud); n != 1 {
		t.Errorf("59 minutes later: %d failures logged at error, want 1", n)
	}
	now = now.Add(time.Minute)
	tn.Step(context.Background())
	if n := strings.Count(log.String(), loud); n != 2 {
		t.Errorf("an hour later: %d failures logged at error, want 2", n)
	}
	// Another failure is said at once.
	if err := os.WriteFile(filepath.Join(dir, "chat.json"), []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	tn.Step(context.Background())
	if n := strings.Count(log.String(), loud); n != 3 {
		t.Errorf("another failure: %d failures logged at error, want 3", n)
	}
}

// TestTuningResultFromAnotherConfig: chat asks for a budget of 0.1%
// (max_miss 0.001, the default) in adopt mode. A result file tuned at 1%
// (max_miss_pct 1: what a CronJob run before the budget was tightened
// wrote) judged "holds" on other terms: it is not used (no candidate, no
// state, the configured policy deciding) and the log names the file and
// both budgets. A result at 0.1% is adopted. A reload to max_miss 0.01
// then drops it: the configured policy decides again and its series go.
func TestTuningResultFromAnotherConfig(t *testing.T) {
	dir := t.TempDir()
	yaml := func(extra string) *config.File {
		return tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q, mode: adopt%s}", dir, extra))
	}
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	src := &fakeSource{}
	src.set("chat", load(2, 40, 0))
	reg := prometheus.NewRegistry()
	l := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: clock})
	tn := NewTuning(reg)
	tn.Now = clock
	var log bytes.Buffer
	tn.Log = slog.New(slog.NewTextHandler(&log, nil))
	l.SetTuning(tn)
	ctx := context.Background()
	if err := l.SetConfig(ctx, yaml("")); err != nil {
		t.Fatal(err)
	}
	c := tune.Candidate{Metric: "queue", Target: 8, Options: []tune.Option{{Name: "min", Value: 2, Default: 1, Key: "minReplicaCount"}}}
	write := func(pct float64, at time.Time) {
		r := tune.TargetResult{Target: "chat", At: at, SLOTTFT: 2, Period: 15, Policy: c.Policy(), Candidate: c, Outcome: tune.Outcome{Holds: true, MaxMissPct: pct}}
		if err := tune.WriteResult(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	write(1, now)
	tn.Step(ctx)
	l.Cycle(ctx)
	g := gatherer(l.metrics, reg)
	if s, p := tuneState(tn, "chat"); s != "" || p != "" {
		t.Errorf("a result tuned at 1%%: state %q %q, want none", s, p)
	}
	if v, ok := gauge(t, g, "infscale_candidate_desired_replicas", map[string]string{"target": "chat"}); ok {
		t.Errorf("candidate %v exported from a result of another budget", v)
	}
	if d := desired(t, l.metrics, "chat"); d != 2 {
		t.Errorf("live %v, want the configured queue 24's 2", d)
	}
	want := filepath.Join(dir, "chat.json") + ": tuned with max_miss 0.01 (the target's is 0.001): from another configuration of target chat; not used until infscale tune --shard writes a result for this configuration"
	if !strings.Contains(log.String(), want) {
		t.Errorf("log %q\nwant %q", log.String(), want)
	}

	now = now.Add(time.Minute)
	write(0.1, now)
	tn.Step(ctx)
	if s, p := tuneState(tn, "chat"); s != TuneStateAdopted || p != "queue:8,min=2" {
		t.Fatalf("a result at 0.1%%: state %q %q, want adopted", s, p)
	}
	now = now.Add(15 * time.Second)
	l.Cycle(ctx)
	if d := desired(t, l.metrics, "chat"); d != 5 {
		t.Errorf("live %v adopted, want queue:8,min=2's 5", d)
	}

	if err := l.SetConfig(ctx, yaml(", max_miss: 0.01")); err != nil {
		t.Fatal(err)
	}
	if s, p := tuneState(tn, "chat"); s != "" || p != "" {
		t.Errorf("after max_miss changed: state %q %q, want none", s, p)
	}
	tn.mu.Lock()
	adopted := tn.targets["chat"].adopted
	tn.mu.Unlock()
	if adopted != nil {
		t.Error("after max_miss changed the tuned candidate still decides")
	}
	g = gatherer(l.metrics, reg)
	for _, name := range []string{"infscale_candidate_desired_replicas", "infscale_tuned_policy_info"} {
		if v, ok := gauge(t, g, name, map[string]string{"target": "chat"}); ok {
			t.Errorf("%s %v after the result was dropped", name, v)
		}
	}
	if !strings.Contains(log.String(), `msg="tuned candidate dropped: it was tuned for another max_miss, slo_ttft, interval, replica or scale to zero; the configured policy decides until a new result" target=chat policy="queue:8,min=2" adopted=true`) {
		t.Errorf("log %q: want the drop", log.String())
	}
}

// TestTuningAdoptedWhenTheRunEnds: a Step that begins at 12:00 and whose
// run ends at 12:07 (an in-process run of a week takes minutes) adopts at
// 12:07: the audit line says so, and the live misses are counted from
// then. They were counted from 12:00, so the configured policy's misses
// during the run were charged to the candidate, and its first check came
// 5 minutes after the Step began, 2 minutes after the switch.
func TestTuningAdoptedWhenTheRunEnds(t *testing.T) {
	dir := t.TempDir()
	f := tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q, mode: adopt}", dir))
	start := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	calls := 0
	clock := func() time.Time { // due and the run's start read 12:00, later readings 12:07
		calls++
		if calls <= 2 {
			return start
		}
		return start.Add(7 * time.Minute)
	}
	reg := prometheus.NewRegistry()
	var audit bytes.Buffer
	l := newLoop(t, LoopOptions{Source: &fakeSource{}, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: clock, Audit: &audit})
	tn := NewTuning(reg)
	tn.Now = clock
	l.SetTuning(tn)
	if err := l.SetConfig(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	c := tune.Candidate{Metric: "queue", Target: 8}
	if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: start, Policy: c.Policy(), Candidate: c, Outcome: tune.Outcome{Holds: true, MaxMissPct: 0.1}}); err != nil {
		t.Fatal(err)
	}
	calls = 0
	tn.stepFast(context.Background())
	tn.mu.Lock()
	at := tn.targets["chat"].adoptedAt
	tn.mu.Unlock()
	if want := start.Add(7 * time.Minute); !at.Equal(want) {
		t.Errorf("adopted at %s, want %s (when the run ended)", at, want)
	}
	if !strings.Contains(audit.String(), `{"target":"chat","at":"2026-01-05T12:07:00Z","tune":{"event":"adopted"`) {
		t.Errorf("audit %s: want the adopt line at 12:07", audit.String())
	}
}

// TestTuningStateSurvivesRestart: with --state-dir, a restart keeps what
// tuning did. Adopted at 12:00 (queue:8,min=2, which asks ceil(2 x 20/8)
// = 5 where the configured queue 24 keeps 2), serve restarts at 12:10:
// before any Step the candidate decides again (5) and is exported as
// adopted, and the Step that reads the same result file switches nothing
// (no second audit line). Without the file the restart handed the target
// back to its configured policy until the next result and adopted it
// again then, a second switch within every. A reload that drops the
// result removes the file, so nothing comes back at the next restart.
func TestTuningStateSurvivesRestart(t *testing.T) {
	results, state := t.TempDir(), t.TempDir()
	f := tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q, mode: adopt}", results))
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ctx := context.Background()
	start := func() (*Loop, *Tuning, *prometheus.Registry, *bytes.Buffer) {
		src := &fakeSource{}
		src.set("chat", load(2, 40, 0))
		reg := prometheus.NewRegistry()
		var audit bytes.Buffer
		l := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: clock, Audit: &audit})
		tn := NewTuning(reg)
		tn.Now, tn.StateDir = clock, state
		l.SetTuning(tn)
		if err := l.SetConfig(ctx, f); err != nil {
			t.Fatal(err)
		}
		return l, tn, reg, &audit
	}
	l, tn, _, _ := start()
	c := tune.Candidate{Metric: "queue", Target: 8, Options: []tune.Option{{Name: "min", Value: 2, Default: 1, Key: "minReplicaCount"}}}
	if err := tune.WriteResult(results, tune.TargetResult{Target: "chat", At: now, SLOTTFT: 2, Period: 15, Policy: c.Policy(), Candidate: c,
		Outcome: tune.Outcome{Holds: true, MaxMissPct: 0.1}}); err != nil {
		t.Fatal(err)
	}
	tn.Step(ctx)
	l.Cycle(ctx)
	if d := desired(t, l.metrics, "chat"); d != 5 {
		t.Fatalf("adopted: live %v, want 5", d)
	}

	now = now.Add(10 * time.Minute)
	l, tn, reg, audit := start()
	if s, p := tuneState(tn, "chat"); s != TuneStateAdopted || p != "queue:8,min=2" {
		t.Errorf("after the restart: state %q %q, want adopted queue:8,min=2", s, p)
	}
	l.Cycle(ctx)
	if d := desired(t, l.metrics, "chat"); d != 5 {
		t.Errorf("after the restart: live %v, want the adopted policy's 5", d)
	}
	if v, ok := gauge(t, gatherer(l.metrics, reg), "infscale_tuned_policy_info", map[string]string{"target": "chat", "policy": "queue:8,min=2", "state": "adopted"}); !ok || v != 1 {
		t.Errorf("after the restart: info %v %v, want adopted", v, ok)
	}
	tn.Step(ctx)
	if strings.Contains(audit.String(), `"tune"`) {
		t.Errorf("after the restart the same result switched again:\n%s", audit.String())
	}

	// A reload to another budget drops the result and, at the next Step,
	// its file: the restart after that starts without a candidate.
	if err := l.SetConfig(ctx, tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q, mode: adopt, max_miss: 0.01}", results))); err != nil {
		t.Fatal(err)
	}
	tn.Step(ctx)
	if _, err := os.Stat(filepath.Join(state, "tune", "chat.json")); !os.IsNotExist(err) {
		t.Errorf("the dropped result's state file: %v, want it removed", err)
	}
}

// TestTuningStateFileCorrupt: a tuning state file that does not decode
// is logged, naming it and the copy of its bytes kept as NAME.json.refused,
// and the target starts without a candidate.
func TestTuningStateFileCorrupt(t *testing.T) {
	state := t.TempDir()
	path := filepath.Join(state, "tune", "chat.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"result": {"target": "chat"`), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	l := newLoop(t, LoopOptions{Source: &fakeSource{}, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second})
	tn := NewTuning(reg)
	var log bytes.Buffer
	tn.Log, tn.StateDir = slog.New(slog.NewTextHandler(&log, nil)), state
	l.SetTuning(tn)
	if err := l.SetConfig(context.Background(), tuneTarget(t, fmt.Sprintf("{dir: %q}", t.TempDir()))); err != nil {
		t.Fatal(err)
	}
	if s, p := tuneState(tn, "chat"); s != "" || p != "" {
		t.Errorf("state %q %q, want none", s, p)
	}
	if !strings.Contains(log.String(), `msg="tuning state not restored; the target starts without a candidate" target=chat err="`+path+": unexpected end of JSON input; its bytes are kept as "+path+".refused (the target's next save overwrites the file)") {
		t.Errorf("log %q", log.String())
	}
	// The next save overwrites tune/chat.json (a newer infscale's file
	// after a rollback, as serve's state files): a copy is kept.
	if b, err := os.ReadFile(path + ".refused"); err != nil || string(b) != `{"result": {"target": "chat"` {
		t.Errorf("kept copy %q (%v), want the refused bytes", b, err)
	}
}

// TestTuningHungPrometheusBesideCycles: a re-tune whose history query
// never comes back (Prometheus hung on a week's range query) delays no
// decision: 20 cycles and a config reload run while the run waits, each
// deciding the configured queue 24's 2 (2 replicas running 40:
// ceil(2 x 20/24) = 2). Stopping serve ends the run at once, with no
// "tuning failed" line and nothing adopted.
func TestTuningHungPrometheusBesideCycles(t *testing.T) {
	f, err := config.Parse([]byte(`prometheus: {url: "http://prometheus:9090"}
targets:
- name: chat
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 8
  tune: {every: 1h, mode: adopt}
`), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	src.set("chat", load(2, 40, 0))
	reg := prometheus.NewRegistry()
	l := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second})
	tn := NewTuning(reg)
	tn.API = &hangingRange{}
	var log buftest.Buffer
	tn.Log = slog.New(slog.NewTextHandler(&log, nil))
	l.SetTuning(tn)
	if err := l.SetConfig(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tn.Step(ctx) }()
	for running := false; !running; {
		time.Sleep(time.Millisecond)
		tn.mu.Lock()
		running = tn.targets["chat"].running
		tn.mu.Unlock()
	}
	t0 := time.Now()
	for i := range 20 {
		l.Cycle(context.Background())
		if d := desired(t, l.metrics, "chat"); d != 2 {
			t.Fatalf("cycle %d: desired %v, want 2", i, d)
		}
		if i == 10 {
			if err := l.SetConfig(context.Background(), f); err != nil {
				t.Fatal(err)
			}
		}
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("20 cycles and a reload took %s beside the hung run", d)
	}
	select {
	case <-done:
		t.Fatal("the run ended before the stop: the hung query was not hung")
	default:
	}
	stop()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the run did not end at the stop")
	}
	if strings.Contains(log.String(), "tuning failed") {
		t.Errorf("log %q: a stop is no failure", log.String())
	}
	if s, _ := tuneState(tn, "chat"); s != "" {
		t.Errorf("state %q after a run that never finished", s)
	}
}

// TestTuningDirNotBehindRuns: the tune.dir results and the live-miss
// checks do not wait for another target's in-process run. slow's run
// hangs (its history query never answers); chat's result, written while
// it hangs, is adopted within seconds. Run was one loop, one target
// after the other: chat's file was read only once slow's run was over,
// and an adopted candidate's revert check waited the same way.
func TestTuningDirNotBehindRuns(t *testing.T) {
	dir := t.TempDir()
	f, err := config.Parse([]byte(fmt.Sprintf(`prometheus: {url: "http://prometheus:9090"}
targets:
- name: slow
  selector: '{namespace="slow"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 8
  tune: {every: 1h}
- name: chat
  selector: '{namespace="chat"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 8
  tune: {every: 1h, mode: adopt, dir: %q}
`, dir)), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	l := newLoop(t, LoopOptions{Source: &fakeSource{}, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second})
	tn := NewTuning(reg)
	// chat's first result waits for the look-back of its state before
	// this start (lookBack), on the same hanging Prometheus: bounded.
	tn.API, tn.Tick, tn.CheckEvery, tn.LookBackTimeout = &hangingRange{}, 10*time.Millisecond, time.Hour, time.Second
	l.SetTuning(tn)
	if err := l.SetConfig(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tn.Run(ctx) }()
	defer func() { stop(); <-done }()
	for running := false; !running; {
		time.Sleep(time.Millisecond)
		tn.mu.Lock()
		running = tn.targets["slow"].running
		tn.mu.Unlock()
	}
	c := tune.Candidate{Metric: "queue", Target: 8}
	if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: time.Now(), Policy: c.Policy(), Candidate: c, Outcome: tune.Outcome{Holds: true, MaxMissPct: 0.1}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if s, _ := tuneState(tn, "chat"); s == TuneStateAdopted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("chat's result not adopted within 5 s while slow's run hangs")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTuningPendingAdoptedAfterEvery: in adopt mode with every 1h, A is
// adopted at 12:00 and B, a result that holds, comes at 12:30: within
// every of the switch, it waits in shadow. At 13:00, with no newer file,
// B is adopted (from A), one more audit line. It stayed in shadow until
// a newer result came (a daily CronJob's next file, read at 23h59m
// after the switch, waited a further day).
func TestTuningPendingAdoptedAfterEvery(t *testing.T) {
	dir := t.TempDir()
	f := tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q, mode: adopt}", dir))
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	reg := prometheus.NewRegistry()
	var audit bytes.Buffer
	l := newLoop(t, LoopOptions{Source: &fakeSource{}, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: clock, Audit: &audit})
	tn := NewTuning(reg)
	tn.Now = clock
	l.SetTuning(tn)
	ctx := context.Background()
	if err := l.SetConfig(ctx, f); err != nil {
		t.Fatal(err)
	}
	write := func(target float64) {
		c := tune.Candidate{Metric: "queue", Target: target}
		if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: now, Policy: c.Policy(), Candidate: c, Outcome: tune.Outcome{Holds: true, MaxMissPct: 0.1}}); err != nil {
			t.Fatal(err)
		}
	}
	write(8)
	tn.Step(ctx)
	now = now.Add(30 * time.Minute)
	write(16)
	tn.Step(ctx)
	if s, p := tuneState(tn, "chat"); s != TuneStateShadow || p != "queue:16" {
		t.Fatalf("12:30: %q %q, want queue:16 in shadow (within every of the switch)", s, p)
	}
	now = now.Add(29 * time.Minute)
	tn.Step(ctx)
	if s, _ := tuneState(tn, "chat"); s != TuneStateShadow {
		t.Errorf("12:59: %q, want shadow still", s)
	}
	now = now.Add(time.Minute)
	tn.Step(ctx)
	if s, p := tuneState(tn, "chat"); s != TuneStateAdopted || p != "queue:16" {
		t.Errorf("13:00: %q %q, want queue:16 adopted", s, p)
	}
	if !strings.Contains(audit.String(), `{"target":"chat","at":"2026-01-05T13:00:00Z","tune":{"event":"adopted","policy":"queue:16","from":"queue:8"`) {
		t.Errorf("audit %s: want queue:16 adopted from queue:8 at 13:00", audit.String())
	}
}

// TestTuningResultFromTheFuture: a result stamped an hour after serve's
// clock (12:00) is refused, naming the file and both times: taken, it
// kept every later result out until 13:00, since only a newer one
// replaces it. One 4 minutes ahead (a clock a little fast) is taken.
func TestTuningResultFromTheFuture(t *testing.T) {
	dir := t.TempDir()
	f := tuneTarget(t, fmt.Sprintf("{dir: %q}", dir))
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	tn, _, log := tuningAt(t, f, func() time.Time { return now }, nil)
	write := func(at time.Time) {
		c := tune.Candidate{Metric: "queue", Target: 8}
		if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: at, Policy: c.Policy(), Candidate: c, Outcome: tune.Outcome{Holds: true, MaxMissPct: 0.1}}); err != nil {
			t.Fatal(err)
		}
	}
	write(now.Add(time.Hour))
	tn.Step(context.Background())
	if s, _ := tuneState(tn, "chat"); s != "" {
		t.Errorf("a result from 13:00 at 12:00: state %q, want none", s)
	}
	want := filepath.Join(dir, "chat.json") + ": tuned on history up to 2026-01-05T13:00:00Z, after serve's clock (2026-01-05T12:00:00Z): the clock of the machine that wrote it is ahead; not used"
	if !strings.Contains(log.String(), want) {
		t.Errorf("log %q\nwant %q", log.String(), want)
	}
	write(now.Add(4 * time.Minute))
	tn.Step(context.Background())
	if s, _ := tuneState(tn, "chat"); s != TuneStateShadow {
		t.Errorf("a result 4 minutes ahead: state %q, want shadow", s)
	}
}

// TestTuningMovingFailureSaidOnce: a failure whose message names a
// moving span is one failure. A result stamped an hour ahead of serve's
// clock is refused at each minute's read with serve's clock in the
// message: said at error once in the 55 minutes it stays ahead (it was
// said 55 times), and a failure of another kind at once.
func TestTuningMovingFailureSaidOnce(t *testing.T) {
	dir := t.TempDir()
	f := tuneTarget(t, fmt.Sprintf("{dir: %q}", dir))
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	tn, _, log := tuningAt(t, f, func() time.Time { return now }, nil)
	c := tune.Candidate{Metric: "queue", Target: 8}
	if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: now.Add(time.Hour), Policy: c.Policy(), Candidate: c, Outcome: tune.Outcome{Holds: true, MaxMissPct: 0.1}}); err != nil {
		t.Fatal(err)
	}
	const loud = "tuning failed; the target keeps its policy"
	for range 55 {
		tn.Step(context.Background())
		now = now.Add(time.Minute)
	}
	if n := strings.Count(log.String(), loud); n != 1 || !strings.Contains(log.String(), "after serve's clock (2026-01-05T12:00:00Z)") {
		t.Errorf("55 reads of a result an hour ahead: %d failures logged at error, want 1 (at 12:00); log:\n%s", n, log.String())
	}
	if err := os.WriteFile(filepath.Join(dir, "chat.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	tn.Step(context.Background())
	if n := strings.Count(log.String(), loud); n != 2 {
		t.Errorf("another failure: %d failures logged at error, want 2", n)
	}
}

// TestTuningUnusableAfterReload: queue:8,min=2 is adopted; a reload
// makes the target scale to zero (minReplicaCount 0 and a zero: block),
// which the candidate's floor of 2 cannot take (zero needs min 0). The
// configured policy decides again, with the reload's zero: block, and
// the candidate's series go. The adopted policy, built on the config
// before the reload, kept deciding: the reload did not take effect, and
// the candidate's last value stayed exported. The result, replayed at a
// floor, is dropped as from another configuration (tune.Matches), so the
// target is tuned again at the next look; it was kept as rejected before,
// until the next run, up to every later.
func TestTuningUnusableAfterReload(t *testing.T) {
	dir := t.TempDir()
	base := fmt.Sprintf(`
targets:
- name: chat
  scrape: [http://127.0.0.1:1/metrics]
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  max: 8
  tune: {every: 1h, dir: %q, mode: adopt}
`, dir)
	parse := func(text string) *config.File {
		f, err := config.Parse([]byte(text), "tune.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	src := &fakeSource{}
	src.set("chat", load(2, 40, 0))
	reg := prometheus.NewRegistry()
	l := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: clock})
	tn := NewTuning(reg)
	tn.Now = clock
	l.SetTuning(tn)
	ctx := context.Background()
	if err := l.SetConfig(ctx, parse(base)); err != nil {
		t.Fatal(err)
	}
	c := tune.Candidate{Metric: "queue", Target: 8, Options: []tune.Option{{Name: "min", Value: 2, Default: 1, Key: "minReplicaCount"}}}
	if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: now, Policy: c.Policy(), Candidate: c, Outcome: tune.Outcome{Holds: true, MaxMissPct: 0.1}}); err != nil {
		t.Fatal(err)
	}
	tn.Step(ctx)
	l.Cycle(ctx)
	if s, _ := tuneState(tn, "chat"); s != TuneStateAdopted {
		t.Fatalf("state %q, want adopted", s)
	}
	zero := strings.Replace(base, "  max: 8\n", "  max: 8\n  min: 0\n  zero: {held_scrape: http://127.0.0.1:2/metrics}\n", 1)
	if err := l.SetConfig(ctx, parse(zero)); err != nil {
		t.Fatal(err)
	}
	var live recommend.Policy
	l.mu.Lock()
	for _, tg := range l.targets {
		live = tg.policy
	}
	l.mu.Unlock()
	if p := tn.policyFor("chat", &live); p != &live {
		t.Errorf("after the reload the policy deciding is %+v, want the configured one (with zero:)", p)
	}
	tn.mu.Lock()
	res, lastRun := tn.targets["chat"].res, tn.targets["chat"].lastRun
	tn.mu.Unlock()
	if s, _ := tuneState(tn, "chat"); s != "" || res != nil || !lastRun.IsZero() {
		t.Errorf("state %q, result %v, last run %v; want the result dropped (tuned at a floor, the target at zero) and the target due", s, res != nil, lastRun)
	}
	if v, ok := gauge(t, gatherer(l.metrics, reg), "infscale_candidate_desired_replicas", map[string]string{"target": "chat"}); ok {
		t.Errorf("candidate %v still exported", v)
	}
}

// TestTuningAdoptedFollowsReload: queue:8,min=2 is adopted (max 8); a
// later result, queue:16, does not hold and is rejected, the adopted one
// staying; a reload lowers maxReplicaCount to 3. The adopted policy is
// rebuilt on the reloaded config: max 3, and 2 replicas running 40 ask
// min(ceil(2 x 20/8), 3) = 3. It was rebuilt only while the last result
// was the adopted one's, so it kept max 8 and asked 5.
func TestTuningAdoptedFollowsReload(t *testing.T) {
	dir := t.TempDir()
	yaml := func(max int) *config.File {
		f, err := config.Parse([]byte(fmt.Sprintf(`
targets:
- name: chat
  scrape: [http://127.0.0.1:1/metrics]
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  max: %d
  tune: {every: 1h, dir: %q, mode: adopt}
`, max, dir)), "tune.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	src := &fakeSource{}
	src.set("chat", load(2, 40, 0))
	reg := prometheus.NewRegistry()
	l := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: clock})
	tn := NewTuning(reg)
	tn.Now = clock
	l.SetTuning(tn)
	ctx := context.Background()
	if err := l.SetConfig(ctx, yaml(8)); err != nil {
		t.Fatal(err)
	}
	write := func(c tune.Candidate, holds bool) {
		if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: now, Policy: c.Policy(), Candidate: c, Outcome: tune.Outcome{Holds: holds, MaxMissPct: 0.1}}); err != nil {
			t.Fatal(err)
		}
	}
	write(tune.Candidate{Metric: "queue", Target: 8, Options: []tune.Option{{Name: "min", Value: 2, Default: 1, Key: "minReplicaCount"}}}, true)
	tn.Step(ctx)
	now = now.Add(time.Minute)
	write(tune.Candidate{Metric: "queue", Target: 16}, false)
	tn.Step(ctx)
	if s, p := tuneState(tn, "chat"); s != TuneStateRejected || p != "queue:16" {
		t.Fatalf("state %q %q, want queue:16 rejected", s, p)
	}
	if err := l.SetConfig(ctx, yaml(3)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(15 * time.Second)
	l.Cycle(ctx)
	if d := desired(t, l.metrics, "chat"); d != 3 {
		t.Errorf("live %v after the reload to max 3, want 3 (the adopted queue:8,min=2 within max 3)", d)
	}
}

// TestReloadReplicatedInProcessAdopt: serve with an elector (several
// replicas) refuses a reload that gives a target mode: adopt without
// tune.dir, as the start refuses it (CheckReplicated): the reload fails,
// is counted, and the running config stays.
func TestReloadReplicatedInProcessAdopt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "serve.yaml")
	write := func(tune string) {
		if err := os.WriteFile(path, []byte(`targets:
- name: chat
  scrape: [http://127.0.0.1:1/metrics]
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  max: 8
  tune: `+tune+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(fmt.Sprintf("{mode: adopt, dir: %q}", dir))
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	src.set("chat", load(1, 0, 0))
	var logs buftest.Buffer
	reload := make(chan os.Signal, 1)
	base, cancel, done := startRun(t, cfg, Options{ConfigPath: path, Source: src, Version: "test", Elector: &fakeElector{ended: make(chan struct{})},
		Log: slog.New(slog.NewTextHandler(&logs, nil)), Reload: reload})
	// In embedded mode in-process tuning needs a dir (the config refuses
	// it otherwise), so the refused file names a Prometheus.
	if err := os.WriteFile(path, []byte(`prometheus: {url: "http://127.0.0.1:1"}
targets:
- name: chat
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  max: 8
  tune: {mode: adopt}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	reload <- os.Interrupt
	waitFor(t, "the reload refused", func() bool {
		_, body := get(t, base+"/metrics")
		return strings.Contains(body, `infscale_config_reloads_total{result="failure"} 1`)
	})
	if !strings.Contains(logs.String(), `msg="config reload failed; keeping the running config"`) || !strings.Contains(logs.String(), `targets[0].tune (target \"chat\"): mode: adopt tunes in process`) {
		t.Errorf("log %s: want the reload refused naming the target", logs.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// downAPI is a Prometheus that refuses every query (a fault).
type downAPI struct{}

func (downAPI) Instant(context.Context, string, time.Time) (model.Vector, []string, error) {
	return nil, nil, errors.New("connection refused")
}

func (downAPI) Range(context.Context, string, time.Time, time.Time, time.Duration) (model.Matrix, []string, error) {
	return nil, nil, errors.New("connection refused")
}

// TestTuningLiveCheckFailureLogged: an adopted candidate's live misses
// cannot be read (Prometheus down): it stays adopted, and the read is
// tried each minute, but the same failure is said at warn once an hour,
// as a run's failure is: 5 minutes after the switch, then not in the 59
// minutes after (it was 60 lines an hour per adopted target), then again.
func TestTuningLiveCheckFailureLogged(t *testing.T) {
	dir := t.TempDir()
	f := tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q, mode: adopt}", dir))
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	tn, _, log := tuningAt(t, f, func() time.Time { return now }, downAPI{})
	c := tune.Candidate{Metric: "queue", Target: 8}
	if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: now, Policy: c.Policy(), Candidate: c, Outcome: tune.Outcome{Holds: true, MaxMissPct: 0.1}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tn.Step(ctx)
	const loud = `level=WARN msg="live misses not read; the adopted policy stays" target=chat`
	now = now.Add(5 * time.Minute)
	tn.Step(ctx)
	if n := strings.Count(log.String(), loud); n != 1 {
		t.Fatalf("5 minutes after the switch: %d warnings, want 1; log:\n%s", n, log.String())
	}
	for range 59 {
		now = now.Add(time.Minute)
		tn.Step(ctx)
	}
	if n := strings.Count(log.String(), loud); n != 1 {
		t.Errorf("59 minutes later: %d warnings, want 1", n)
	}
	now = now.Add(time.Minute)
	tn.Step(ctx)
	if n := strings.Count(log.String(), loud); n != 2 {
		t.Errorf("an hour later: %d warnings, want 2", n)
	}
	if s, p := tuneState(tn, "chat"); s != TuneStateAdopted || p != "queue:8" {
		t.Errorf("state %q %q, want adopted queue:8 still", s, p)
	}
}

// TestTuningOldResultSaid: the CronJob writes a tune.dir result each
// every (1h here); when none newer comes for over 2 hours the one in use
// is said to be old, once an hour while it lasts (serve went on with it
// and nothing said the CronJob had stopped). Taken at 12:00 from history
// up to 12:00: nothing at 14:00 (exactly twice every), a warning at 14:01
// naming its age, none at 15:00, another at 15:01; a newer result at
// 15:02 is not old.
func TestTuningOldResultSaid(t *testing.T) {
	dir := t.TempDir()
	f := tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q}", dir))
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	tn, _, log := tuningAt(t, f, func() time.Time { return now }, nil)
	write := func() {
		c := tune.Candidate{Metric: "queue", Target: 8}
		if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: now, Policy: c.Policy(), Candidate: c, Outcome: tune.Outcome{Holds: true, MaxMissPct: 0.1}}); err != nil {
			t.Fatal(err)
		}
		// Written at the test's clock, as the CronJob writes it at its
		// run (a rewritten file is no missed run).
		if err := os.Chtimes(tune.ResultPath(dir, "chat"), now, now); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	write()
	const old = `level=WARN msg="tuning result is old: no newer one came from infscale tune --shard (the CronJob) for over twice tune.every; is it running? The target goes on with this one" target=chat policy=queue:8 tuned_at=2026-01-05T12:00:00Z`
	for _, c := range []struct {
		at   time.Duration
		want int
		age  string
	}{{0, 0, ""}, {2 * time.Hour, 0, ""}, {2*time.Hour + time.Minute, 1, "age=2h1m0s every=1h"}, {3 * time.Hour, 1, ""}, {3*time.Hour + time.Minute, 2, "age=3h1m0s every=1h"}} {
		now = time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC).Add(c.at)
		tn.Step(ctx)
		if n := strings.Count(log.String(), old); n != c.want || !strings.Contains(log.String(), c.age) {
			t.Errorf("at 12:00 + %s: %d warnings, want %d (with %q); log:\n%s", c.at, n, c.want, c.age, log.String())
		}
	}
	now = now.Add(time.Minute)
	write()
	log.Reset()
	tn.Step(ctx)
	if strings.Contains(log.String(), "tuning result is old") {
		t.Errorf("a new result: %s", log.String())
	}
}

// TestTuningBlockRemovedForgets: removing a target's tune: block is the
// documented roll-back; giving the block back starts afresh. With
// --state-dir, queue:8,min=2 is adopted from tune.dir (2 replicas running
// 40: ceil(2 x 20/8) = 5); the block is removed (the configured queue 24
// decides) and its state file goes at the next save; given back, the
// target has no candidate and decides on queue 24 until the file is read
// again, and that adoption is an audit line of its own. The state file
// restored it at once, deciding on queue 8 from the first cycle with no
// audit line; and so it did when serve started on a config without the
// block and a reload gave it back.
func TestTuningBlockRemovedForgets(t *testing.T) {
	results, state := t.TempDir(), t.TempDir()
	with := tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q, mode: adopt}", results))
	without := tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q, mode: adopt}", results))
	without.Targets[0].Tune = nil
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ctx := context.Background()
	src := &fakeSource{}
	src.set("chat", load(2, 40, 0))
	var audit bytes.Buffer
	start := func(f *config.File) (*Loop, *Tuning) {
		reg := prometheus.NewRegistry()
		l := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: clock, Audit: &audit})
		tn := NewTuning(reg)
		tn.Now, tn.StateDir = clock, state
		l.SetTuning(tn)
		if err := l.SetConfig(ctx, f); err != nil {
			t.Fatal(err)
		}
		return l, tn
	}
	l, tn := start(with)
	c := tune.Candidate{Metric: "queue", Target: 8, Options: []tune.Option{{Name: "min", Value: 2, Default: 1, Key: "minReplicaCount"}}}
	if err := tune.WriteResult(results, tune.TargetResult{Target: "chat", At: now, SLOTTFT: 2, Period: 15, Policy: c.Policy(), Candidate: c,
		Outcome: tune.Outcome{Holds: true, MaxMissPct: 0.1}}); err != nil {
		t.Fatal(err)
	}
	tn.Step(ctx)
	l.Cycle(ctx)
	if d := desired(t, l.metrics, "chat"); d != 5 {
		t.Fatalf("adopted: live %v, want 5", d)
	}
	path := filepath.Join(state, "tune", "chat.json")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("state file: %v", err)
	}
	adopts := func() int { return strings.Count(audit.String(), `"event":"adopted"`) }

	now = now.Add(time.Minute)
	if err := l.SetConfig(ctx, without); err != nil {
		t.Fatal(err)
	}
	l.Cycle(ctx)
	if q := queueTarget(l); q != 24 {
		t.Errorf("block removed: decided on queue %v, want the configured 24", q)
	}
	tn.Step(ctx)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("block removed: state file %v, want it removed", err)
	}

	now = now.Add(time.Minute)
	if err := l.SetConfig(ctx, with); err != nil {
		t.Fatal(err)
	}
	if s, p := tuneState(tn, "chat"); s != "" || p != "" {
		t.Errorf("block given back: state %q %q, want none before the file is read", s, p)
	}
	l.Cycle(ctx)
	if q := queueTarget(l); q != 24 {
		t.Errorf("block given back: decided on queue %v, want the configured 24 until the file is read", q)
	}
	tn.Step(ctx)
	if s, _ := tuneState(tn, "chat"); s != TuneStateAdopted || adopts() != 2 {
		t.Errorf("file read again: state %q, %d adopt lines; want adopted, 2 lines:\n%s", s, adopts(), audit.String())
	}

	// Across a restart: serve stopped with the candidate adopted and
	// started on a config without the block; a reload gives it back.
	now = now.Add(time.Minute)
	l, tn = start(without)
	tn.Step(ctx)
	if err := l.SetConfig(ctx, with); err != nil {
		t.Fatal(err)
	}
	if s, p := tuneState(tn, "chat"); s != "" || p != "" {
		t.Errorf("started without the block, given back: state %q %q, want none", s, p)
	}
}

// queueTarget is the queue target chat's last decision was made on (0:
// none).
func queueTarget(l *Loop) float64 {
	recs := l.Recent()["chat"]
	if len(recs) == 0 || len(recs[len(recs)-1].Raw) != 1 {
		return 0
	}
	return recs[len(recs)-1].Raw[0].Target
}

// TestTuningOldHistoryRewritten: a tune.dir result whose at (the end of
// the history it was tuned on) is old, but whose file the CronJob
// rewrote since, is no missed run: a scale-to-zero target at zero since
// 12:00 has no newer series, and each run writes a result tuned up to
// then again. Taken at 12:00 (every 1h); the file rewritten at 14:00:
// nothing at 14:01 nor 15:01 (the file 1h01m old, within twice every);
// at 16:02 the file is 2h02m old too: said. Before, "is it running?" was
// said at 14:01 while the CronJob ran every hour.
func TestTuningOldHistoryRewritten(t *testing.T) {
	dir := t.TempDir()
	f := tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q}", dir))
	t0 := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	now := t0
	tn, _, log := tuningAt(t, f, func() time.Time { return now }, nil)
	path := writeQueueResult(t, dir, t0)
	ctx := context.Background()
	tn.Step(ctx)
	if err := os.Chtimes(path, t0.Add(2*time.Hour), t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   time.Duration
		want int
	}{{2*time.Hour + time.Minute, 0}, {3*time.Hour + time.Minute, 0}, {4*time.Hour + 2*time.Minute, 1}} {
		now = t0.Add(c.at)
		tn.Step(ctx)
		if n := strings.Count(log.String(), "tuning result is old"); n != c.want {
			t.Errorf("at 12:00 + %s: %d warnings, want %d; log:\n%s", c.at, n, c.want, log.String())
		}
	}
}

// tuningAt is serve's tuning on a loop (a fake source, a 15 s interval)
// whose clocks are clock, asking api (nil: none), with cfg loaded: the
// tuning, its registry and its log.
func tuningAt(t *testing.T, cfg *config.File, clock func() time.Time, api promql.API) (*Tuning, *prometheus.Registry, *bytes.Buffer) {
	t.Helper()
	reg := prometheus.NewRegistry()
	l := newLoop(t, LoopOptions{Source: &fakeSource{}, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: clock})
	tn := NewTuning(reg)
	tn.Now = clock
	if api != nil {
		tn.API = api
	}
	log := new(bytes.Buffer)
	tn.Log = slog.New(slog.NewTextHandler(log, nil))
	l.SetTuning(tn)
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return tn, reg, log
}

// TestTuningErrorsCounted: a tuning failure (here a tune.dir result that
// is not JSON, read each Step) is counted in
// infscale_tuning_errors_total{target}, every time, though the log says
// it once: it was only logged, so nothing could alert on a target whose
// tuning kept failing. The series is 0 from the configuration on (as the
// targets' scale_changes_total), so increase() sees the first failure. A
// good file adds nothing; a target removed by a
// reload loses its series.
func TestTuningErrorsCounted(t *testing.T) {
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	l := newLoop(t, LoopOptions{Source: &fakeSource{}, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second})
	tn := NewTuning(reg)
	l.SetTuning(tn)
	if err := l.SetConfig(context.Background(), tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q}", dir))); err != nil {
		t.Fatal(err)
	}
	count := func() (float64, bool) {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "infscale_tuning_errors_total" {
				for _, m := range mf.GetMetric() {
					if hasLabel(m, "target", "chat") {
						return m.GetCounter().GetValue(), true
					}
				}
			}
		}
		return 0, false
	}
	// At 0 from the configuration, before any run: a series first
	// exported at 1 is one whose increase() does not see the first
	// failure (the documented alert, increase(...[1h]) > 0).
	if v, ok := count(); !ok || v != 0 {
		t.Errorf("before any run: %v (%v), want a series at 0", v, ok)
	}
	if err := os.WriteFile(tune.ResultPath(dir, "chat"), []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tn.Step(ctx)
	tn.Step(ctx)
	if v, ok := count(); !ok || v != 2 {
		t.Errorf("after two failed reads: %v (%v), want 2", v, ok)
	}
	c := tune.Candidate{Metric: "queue", Target: 8}
	if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: time.Now(), Policy: c.Policy(), Candidate: c, Outcome: tune.Outcome{Holds: true, MaxMissPct: 0.1}}); err != nil {
		t.Fatal(err)
	}
	tn.Step(ctx)
	if v, ok := count(); !ok || v != 2 {
		t.Errorf("after a good read: %v (%v), want 2 still", v, ok)
	}
	f, err := config.Parse([]byte("targets:\n- name: other\n  server: vllm\n  selector: '{a=\"b\"}'\n  metrics: [{type: queue, target: 8}]\n  maxReplicaCount: 4\nprometheus: {url: 'http://prometheus:9090'}\n"), "other.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetConfig(ctx, f); err != nil {
		t.Fatal(err)
	}
	if v, ok := count(); ok {
		t.Errorf("target removed: series %v still exported", v)
	}
}

// TestTuningDirLeftoverNotTaken: serve never deletes tune.dir files, so a
// result of a target removed from the config stays; when a target of that
// name comes back (or serve starts on it) a file whose history and write
// are both over twice tune.every old is left from that earlier life (or a
// CronJob that stopped) and is not taken: logged, the configured policy
// decides. It was shadowed (and in adopt mode adopted) at once. A file
// rewritten recently (the CronJob runs; a target at zero has no newer
// history) is taken.
func TestTuningDirLeftoverNotTaken(t *testing.T) {
	dir := t.TempDir()
	f := tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q, mode: adopt}", dir))
	t0 := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	path := writeQueueResult(t, dir, t0)
	now := t0.Add(30 * 24 * time.Hour) // the target comes back a month later
	tn, _, log := tuningAt(t, f, func() time.Time { return now }, nil)
	tn.Step(context.Background())
	if state, policy := tuneState(tn, "chat"); state != "" {
		t.Errorf("a month-old leftover result taken: state %q policy %q", state, policy)
	}
	if want := "tuned on history up to 2026-01-05T12:00:00Z and written 2026-01-05T12:00:00Z, over twice tune.every (1h) before serve's clock"; !strings.Contains(log.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, log.String())
	}
	// The CronJob rewrites it now, on old history (a target at zero): taken.
	if err := os.Chtimes(path, now, now); err != nil {
		t.Fatal(err)
	}
	tn.Step(context.Background())
	if state, _ := tuneState(tn, "chat"); state != TuneStateAdopted {
		t.Errorf("a result rewritten now: state %q, want adopted", state)
	}
}

// writeQueueResult writes target chat's result in dir, queue:8 holding,
// tuned on history up to at and written at at; it returns the file's path.
func writeQueueResult(t *testing.T, dir string, at time.Time) string {
	t.Helper()
	c := tune.Candidate{Metric: "queue", Target: 8}
	if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: at, Policy: c.Policy(), Candidate: c, Outcome: tune.Outcome{Holds: true, MaxMissPct: 0.1}}); err != nil {
		t.Fatal(err)
	}
	path := tune.ResultPath(dir, "chat")
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
	return path
}
