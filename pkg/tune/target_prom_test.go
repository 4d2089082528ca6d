package tune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/synthweek"
	"github.com/infscale/infscale/pkg/synthweek/synthweektest"
)

// TestTuneTargetHistoryAsCovered: a target tuned an hour after its data
// ends (a Prometheus whose scrapes stopped, or lag) says it was tuned on
// the history the data covers: At within two steps (30 s each: the last
// samples still count in the rate windows after them) of the data's end
// (it said the time asked, an hour later, and serve's staleness check
// reads At), History the 3 h asked less that hour, within two steps.
func TestTuneTargetHistoryAsCovered(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled week and tunes on it")
	}
	srv, tr := synthweektest.Serve(t, synthweek.Config{})
	now := tr.End.Add(time.Hour)
	f, err := config.Parse([]byte(fmt.Sprintf(`prometheus: {url: %s}
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  max: 20
  tune: {every: 1h, history: 3h}
`, srv.URL)), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	api, err := promql.NewClient(promql.ClientConfig{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	const step = 30 * time.Second
	res, err := TuneTarget(context.Background(), api, &f.Targets[0], now, TargetOptions{Workers: 2, Step: step, Space: Space{
		Metrics: []MetricSpace{{Name: "queue", Targets: []float64{0.5}, Integer: true, PerBatch: true}},
		Dims:    DefaultSpace.Dims,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if d := res.At.Sub(tr.End); d < -2*step || d > 2*step {
		t.Errorf("At %s, want within %s of the data's end %s (asked up to %s)", res.At, 2*step, tr.End, now)
	}
	if want := (2 * time.Hour).Seconds(); res.History < want-2*step.Seconds() || res.History > want+2*step.Seconds() {
		t.Errorf("History %.0f s, want about %.0f (3 h asked, the last hour without data)", res.History, want)
	}
}

// TestTuneTargetShortHistory: too little history is refused, saying how
// much the data covers and what is needed, on one synthetic day (its
// first scrape at 00:00, its data ending at 24:00):
//   - a new target whose series began 40 minutes ago (now 00:40) asks for
//     7d and gets 40 minutes: under config.MinTuneHistory (1h). It was
//     tuned on those minutes (or failed naming --stress, a flag tune
//     --shard refuses) and a result that "held" on them could be adopted.
//   - a target whose series stopped (now 01:30 the next day) with a
//     history of 2h: the data covers the last 30 minutes of the day, and
//     the error says it ends 1h30m before now, not that the target is new.
func TestTuneTargetShortHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled day and tunes on it")
	}
	srv, tr := synthweektest.Serve(t, synthweek.Config{Days: 1})
	api, err := promql.NewClient(promql.ClientConfig{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, history string
		now           time.Time
		want          string
	}{
		// The data's span: the day's first scrape, 00:00, to now, 00:40.
		{"new", "7d", tr.Start.Add(40 * time.Minute),
			"target chat: history: too little history to tune on: the data covers 40m0s (2026-01-05T00:00:00Z..2026-01-05T00:40:00Z) of the 1w asked; at least 1h is needed (a new target is tuned once its series span that)"},
		// Asked from 23:30; the last scrape at 24:00 still counts in the
		// rate of the step after it (00:00:30), 1h29m30s before 01:30.
		{"stopped", "2h", tr.End.Add(90 * time.Minute),
			"target chat: history: too little history to tune on: the data covers 30m30s (2026-01-05T23:30:00Z..2026-01-06T00:00:30Z) of the 2h asked; at least 1h is needed (its data ends 1h29m30s before now: are its series still scraped?)"},
	} {
		f, err := config.Parse([]byte(fmt.Sprintf(`prometheus: {url: %s}
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 20
  tune: {history: %s}
`, srv.URL, c.history)), "tune.yaml")
		if err != nil {
			t.Fatal(err)
		}
		_, err = TuneTarget(context.Background(), api, &f.Targets[0], c.now, TargetOptions{})
		if !errors.Is(err, ErrShortHistory) {
			t.Fatalf("%s: err %v, want ErrShortHistory", c.name, err)
		}
		if err.Error() != c.want {
			t.Errorf("%s: err %q\nwant %q", c.name, err, c.want)
		}
	}
}

// stepAPI records the steps of the range queries it passes on.
type stepAPI struct {
	promql.API
	mu    sync.Mutex
	steps map[time.Duration]int
	most  int
}

func (a *stepAPI) Range(ctx context.Context, q string, start, end time.Time, step time.Duration) (model.Matrix, []string, error) {
	a.mu.Lock()
	a.steps[step]++
	a.most = max(a.most, int(end.Sub(start)/step)+1)
	a.mu.Unlock()
	return a.API.Range(ctx, q, start, end, step)
}

// TestLiveMissesLongAdoption: the live misses of a candidate adopted a
// week ago are read on at most MaxLivePoints points a series: 7 days at
// serve's 15 s step are 40,320 steps, so the step is 15 s x
// ceil(40,320 / 1,440) = 15 s x 28 = 420 s. The misses are the TTFT
// histogram's increase over the whole week all the same: with a 1 ms
// SLO, inside the first bucket [0, 0.1 s], the requests above 0.1 s
// (only the buckets wholly above the SLO count), as the week's increase
// of the le="0.1" and le="+Inf" buckets reads them within 1%, and the
// requests counted are the week's completions (its arrivals less those
// aborted by the pod restart) within 1%.
func TestLiveMissesLongAdoption(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled week")
	}
	srv, tr := synthweektest.Serve(t, synthweek.Config{})
	f, err := config.Parse([]byte(fmt.Sprintf(`prometheus: {url: %s}
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 20
  tune: {slo_ttft: 1ms}
`, srv.URL)), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := promql.NewClient(promql.ClientConfig{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	api := &stepAPI{API: c, steps: map[time.Duration]int{}}
	live, ok, err := LiveMisses(context.Background(), api, &f.Targets[0], tr.Start, tr.End, 15*time.Second)
	frac, n := live.Late, live.Requests
	if err != nil || !ok {
		t.Fatalf("LiveMisses: %v %v", ok, err)
	}
	delete(api.steps, time.Hour) // the hourly TTFT p95 has its own step, 168 points
	if len(api.steps) != 1 || api.steps[420*time.Second] == 0 || api.most > MaxLivePoints+1 {
		t.Errorf("range steps %v (besides 1h), at most %d points; want 420 s only, at most %d", api.steps, api.most, MaxLivePoints+1)
	}
	v, _, err := c.Instant(context.Background(), fmt.Sprintf(`sum by (le) (increase(vllm:time_to_first_token_seconds_bucket{namespace="llm",le=~"0.1|\\+Inf"}[%ds]))`, int(tr.End.Sub(tr.Start).Seconds())), tr.End)
	if err != nil || len(v) != 2 {
		t.Fatalf("the week's TTFT buckets: %v %v", v, err)
	}
	le := map[string]float64{}
	for _, s := range v {
		le[string(s.Metric["le"])] = float64(s.Value)
	}
	if want := 1 - le["0.1"]/le["+Inf"]; !(want > 0.1) || math.Abs(frac-want) > 0.01*want {
		t.Errorf("miss ratio %g, want the share above 0.1 s, %g, within 1%%", frac, want)
	}
	if want := float64(tr.Requests - tr.Aborted); math.Abs(n-want) > 0.01*want {
		t.Errorf("%g requests counted, want the week's %g completions within 1%%", n, want)
	}
}

// TestTuneTargetHeldOutGap: the synthetic week's scrape gap (Friday
// 16:00-16:20, no sample of any series) in the held-out part of an hour
// of history ending at 16:25: the held-out part is its last quarter,
// 16:10 to 16:25, of which 16:10 to 16:20 and the seconds to the first
// scrape after it (10 of 15 minutes) have no sample. The arrivals there would be the counters' increase spread
// evenly, and the candidate judged out of sample on that flat traffic: it
// is refused, naming the part and how much of it is gap. (It was tuned,
// and its "holds" adopted.)
func TestTuneTargetHeldOutGap(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled week")
	}
	srv, tr := synthweektest.Serve(t, synthweek.Config{})
	f, err := config.Parse([]byte(fmt.Sprintf(`prometheus: {url: %s}
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 20
  tune: {every: 1h, history: 1h}
`, srv.URL)), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	api, err := promql.NewClient(promql.ClientConfig{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	friday := time.Date(2026, 1, 9, 0, 0, 0, 0, time.UTC)
	if !tr.Gap[0].Equal(friday.Add(16 * time.Hour)) {
		t.Fatalf("the week's gap starts %s, want Friday 16:00", tr.Gap[0])
	}
	_, err = TuneTarget(context.Background(), api, &f.Targets[0], friday.Add(16*time.Hour+25*time.Minute), TargetOptions{Workers: 2, Space: Space{
		Metrics: []MetricSpace{{Name: "queue", Targets: []float64{0.5}, Integer: true, PerBatch: true}},
		Dims:    DefaultSpace.Dims,
	}})
	// The gap ends at the first scrape after 16:20, at the lowest offset
	// (under a minute) of the pods scraped then: 10 minutes and some
	// seconds of the held-out part.
	want := "target chat: history: too much of the history is gaps: the held-out part (2026-01-09T16:10:00Z..2026-01-09T16:25:00Z) has no sample for 10m"
	if !errors.Is(err, ErrHistoryGaps) || !strings.Contains(fmt.Sprint(err), want) || !strings.Contains(fmt.Sprint(err), "s of its 15m0s, more than half") {
		t.Errorf("err %v\nwant %q...s of its 15m0s, more than half", err, want)
	}
}

// TestTuneTargetScalesToZero: a target that scales to zero
// (minReplicaCount 0, cooldownPeriod 2m) is tuned as it runs: every
// candidate replayed keeps min 0 and the 120 s cooldown (the replay goes
// to zero after 120 s idle and wakes on the next request), and the
// winner adapts onto the live policy without a floor. Its candidates were
// replayed at the default floor of 1: never at zero, their wake-up misses
// and saved replica-minutes uncounted, and a winner with min=2 could not
// be used on the target at all.
func TestTuneTargetScalesToZero(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled week and tunes on it")
	}
	srv, tr := synthweektest.Serve(t, synthweek.Config{Days: 1})
	f, err := config.Parse([]byte(fmt.Sprintf(`prometheus: {url: %s}
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  minReplicaCount: 0
  maxReplicaCount: 20
  zero: {cooldownPeriod: 2m, held: 'sum(infscale_activator_held_requests)'}
  tune: {every: 1h, history: 3h}
`, srv.URL)), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	api, err := promql.NewClient(promql.ClientConfig{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	res, err := TuneTarget(context.Background(), api, &f.Targets[0], tr.End, TargetOptions{Workers: 2, Space: Space{
		Metrics: []MetricSpace{{Name: "queue", Targets: []float64{0.25, 0.5}, Integer: true, PerBatch: true}},
		Dims:    DefaultSpace.Dims,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := res.Candidate.Option("min"); !ok || v != 0 {
		t.Errorf("winner %s: min %v (set %v), want 0", res.Policy, v, ok)
	}
	if v, ok := res.Candidate.Option("cooldown"); !ok || v != 120 {
		t.Errorf("winner %s: cooldown %v (set %v), want 120 (the target's cooldownPeriod)", res.Policy, v, ok)
	}
	live, err := f.Targets[0].Policy()
	if err != nil {
		t.Fatal(err)
	}
	p, err := res.Candidate.Adapt(live)
	if err != nil || p.Min != 0 || p.Zero == nil || p.Zero.Cooldown != 2*time.Minute {
		t.Errorf("adapted: min %d zero %+v err %v; want min 0 and a 2m cooldown", p.Min, p.Zero, err)
	}
	t.Logf("winner %s: in sample %+v", res.Policy, res.InSample)
}
