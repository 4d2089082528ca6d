package promql

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/modelserver"
)

// TestRealPrometheusStuckWholeWindow backfills 10 minutes of samples every
// 15 s into the real Prometheus and reads the Stuck signal (window 2 min)
// at the last sample, T, for one pod per target. Every pod is live (up 1),
// has 6 requests waiting and a flat generation counter (500) wherever it
// has samples; they differ in when their series begin or start waiting:
//
//   - whole:  from T-10m: stuck through the window: 1;
//   - edge:   from T-2m exactly (the window's start): stuck through it: 1;
//   - minute: a new pod, from T-1m (5 samples): stuck 1 minute of 2: 0
//     (its minimum and its flat counter alone would say stuck);
//   - late:   from T-10m, waiting 0 until T-1m, 6 from then on: 0;
//   - after:  from T-2m+15 s, the first sample inside the window: 0.
func TestRealPrometheusStuckWholeWindow(t *testing.T) {
	end := time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
	type pod struct {
		name  string
		from  time.Duration // first sample, before end
		waitF time.Duration // waiting 6 from this time before end, 0 earlier
		want  float64
	}
	pods := []pod{
		{"whole", 10 * time.Minute, 10 * time.Minute, 1},
		{"edge", 2 * time.Minute, 2 * time.Minute, 1},
		{"minute", time.Minute, time.Minute, 0},
		{"late", 10 * time.Minute, time.Minute, 0},
		{"after", 2*time.Minute - 15*time.Second, 2*time.Minute - 15*time.Second, 0},
	}
	var b strings.Builder
	family := func(typ, fam, name string, value func(p pod, before time.Duration) int) {
		fmt.Fprintf(&b, "# TYPE %s %s\n", fam, typ)
		for _, p := range pods {
			for before := p.from; before >= 0; before -= 15 * time.Second {
				fmt.Fprintf(&b, "%s{namespace=\"llm\",pod=%q} %d %d\n", name, p.name, value(p, before), end.Add(-before).Unix())
			}
		}
	}
	family("gauge", "up", "up", func(pod, time.Duration) int { return 1 })
	family("gauge", "vllm:num_requests_waiting", "vllm:num_requests_waiting", func(p pod, before time.Duration) int {
		if before <= p.waitF {
			return 6
		}
		return 0
	})
	family("counter", "vllm:generation_tokens", "vllm:generation_tokens_total", func(pod, time.Duration) int { return 500 })
	b.WriteString("# EOF\n")

	prom := promtest.Start(t, promtest.Options{DataDir: promtest.Backfill(t, b.String()),
		Flags: []string{"--storage.tsdb.retention.time=30d"}})
	c, err := NewClient(ClientConfig{URL: prom.URL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var ts []Target
	for _, p := range pods {
		tg := sel(t, fmt.Sprintf(`{namespace="llm", pod=%q}`, p.name))
		tg.Name, tg.Server, tg.Stuck = p.name, modelserver.VLLM, true
		ts = append(ts, tg)
	}
	res, _ := (&Evaluator{API: c}).Evaluate(context.Background(), ts, end)
	for i, p := range pods {
		if r := res[i]; r.Stuck != p.want || r.Errors[Stuck] != nil {
			t.Errorf("%s: stuck %v (error %v), want %v", p.name, r.Stuck, r.Errors[Stuck], p.want)
		}
	}
}
