package backtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/promql"
)

// TestFetchLateSeriesBaseline: two vLLM pods each finish one request a
// second, scraped every 15 s, over a real Prometheus (promtool backfill).
// chat-1 is scraped all along. chat-2 has served for days (its counter at
// 500,000 an hour before the range) and its scrapes fail from 6 minutes
// before the range's start to 10 minutes after it (a /metrics that times
// out under load, case 19's kind): at the start no sample is within the
// 5-minute lookback, so its first point in the range is at +10 min. That
// point was read as a new pod's, its 500,960 counted as completions in
// one step: 503,960 requests reconstructed where 3,600 finished (30
// minutes x 2 pods x 1/s). With the counter's last value before the start
// as its baseline: chat-1 1,800, chat-2 960 (from the baseline at -6 min
// to +10 min, the 360 before the start included) + 1,200 = 2,160; in all
// 3,960, within 10% of the truth. A pod first seen inside the range
// (chat-3, from +20 min with 120: 2 minutes of its own) still counts in
// full: 120 + 600.
func TestFetchLateSeriesBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled hour")
	}
	start := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	end := start.Add(30 * time.Minute)
	var b strings.Builder
	b.WriteString("# TYPE vllm:request_success counter\n")
	for _, p := range []struct {
		name     string
		from     time.Time
		base     int
		gap0, g1 time.Time
	}{
		{"chat-1", start.Add(-time.Hour), 0, time.Time{}, time.Time{}},
		{"chat-2", start.Add(-time.Hour), 500000 - 3600, start.Add(-6 * time.Minute), start.Add(10 * time.Minute)},
		{"chat-3", start.Add(20 * time.Minute), 120, time.Time{}, time.Time{}},
	} {
		for at := p.from; !at.After(end); at = at.Add(15 * time.Second) {
			if !p.gap0.IsZero() && at.After(p.gap0) && at.Before(p.g1) {
				continue
			}
			fmt.Fprintf(&b, "vllm:request_success_total{namespace=\"llm\",pod=%q,finished_reason=\"stop\"} %d %d\n", p.name, p.base+int(at.Sub(p.from).Seconds()), at.Unix())
		}
	}
	b.WriteString("# EOF\n")
	prom := promtest.Start(t, promtest.Options{DataDir: promtest.Backfill(t, b.String()), Flags: []string{"--storage.tsdb.retention.time=10y"}})
	api, err := promql.NewClient(promql.ClientConfig{URL: prom.URL, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := promql.ParseSelector(`{namespace="llm"}`)
	g, err := NewGrid(start, end, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	h, st, err := Fetch(context.Background(), api, Target{Server: modelserver.VLLM, Selector: ms}, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	inc := counterIncrease(g, h.Success, coverage(g, h.Success, 0))
	total := 0.0
	for _, v := range inc[1:] {
		total += v
	}
	if total < 3600+720 || total > 3960+720+1 {
		t.Errorf("completions %.0f, want 3,600 to 3,960 and chat-3's 720 (the late pod's lifetime count read as completions?); queries %q", total, st.Queried)
	}
	t.Logf("completions %.0f", total)
	n := 0
	for _, q := range st.Queried {
		if strings.Contains(q, "last_over_time") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("baseline queries %d, want 1 (a series starts late)", n)
	}
}

// warnAPI is fakeAPI whose range answers carry warnings.
type warnAPI struct {
	fakeAPI
	warn []string
}

func (w warnAPI) Range(ctx context.Context, q string, s, e time.Time, st time.Duration) (model.Matrix, []string, error) {
	m, _, err := w.fakeAPI.Range(ctx, q, s, e, st)
	return m, w.warn, err
}

// TestFetchPartialHistory: a Thanos querier with a store down answers the
// history with the other stores' series and a warning. Read as whole, the
// replay had the traffic of the stores read only (and tune adopted a policy
// sized for it); the history is refused (reason partial), naming the
// warning. A PromQL annotation is no missing data: read.
func TestFetchPartialHistory(t *testing.T) {
	ms, _ := promql.ParseSelector(`{namespace="llm"}`)
	g := Grid{Start: t0, Step: time.Minute, N: 2}
	tgt := Target{Server: modelserver.VLLM, Selector: ms}
	const thanos = `receive series from Addr: prometheus-b:10901: rpc error: code = Unavailable`
	_, _, err := Fetch(context.Background(), warnAPI{fakeAPI{ranges: map[string]model.Matrix{}}, []string{thanos}}, tgt, g, nil)
	if promql.ReasonOf(err) != promql.ReasonPartial || !strings.Contains(err.Error(), "prometheus-b:10901") {
		t.Errorf("partial history: err %v, want reason partial naming the warning", err)
	}
	_, st, err := Fetch(context.Background(), warnAPI{fakeAPI{ranges: map[string]model.Matrix{}}, []string{"PromQL info: metric might not be a counter"}}, tgt, g, nil)
	if err != nil || len(st.Warnings) == 0 {
		t.Errorf("annotation: err %v, warnings %q; want read, the warning kept", err, st.Warnings)
	}
}
