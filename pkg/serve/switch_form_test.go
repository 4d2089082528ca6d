package serve

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/internal/buftest"
	"github.com/infscale/infscale/pkg/config"
)

// TestSwitchPairOnePoolLogged: chat runs as one pool and decides once;
// a reload makes it a prefill/decode pair, another keeps the pair, a third
// makes it one pool again. Each switch of form is logged once at INFO
// naming chat (the pair's two pools give one line, not two), the reload
// that keeps the form logs nothing, and the state does start fresh: after
// each switch the new keys (chat@prefill and chat@decode, then chat) have
// no decisions, where the one pool had 1 before.
func TestSwitchPairOnePoolLogged(t *testing.T) {
	const one = `targets:
- {name: chat, scrape: ['http://127.0.0.1:1/metrics'], metrics: [{type: queue, target: 24}], max: 8}
`
	const pair = `targets:
- name: chat
  roles:
    prefill: {scrape: ['http://127.0.0.1:1/metrics'], metrics: [{type: running, target: 2}], maxReplicaCount: 8}
    decode: {scrape: ['http://127.0.0.1:2/metrics'], metrics: [{type: running, target: 4}], maxReplicaCount: 8}
`
	parse := func(s string) *config.File {
		t.Helper()
		f, err := config.Parse([]byte(s), "switch.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	src := &fakeSource{}
	src.set("chat", load(1, 50, 10))
	var logs buftest.Buffer
	l := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(prometheus.NewRegistry(), "test"), Interval: 15 * time.Second,
		Now: func() time.Time { return t0 }, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := context.Background()
	if err := l.SetConfig(ctx, parse(one)); err != nil {
		t.Fatal(err)
	}
	l.Cycle(ctx)
	if n := len(l.Recent()["chat"]); n != 1 {
		t.Fatalf("chat as one pool: %d decisions, want 1", n)
	}
	const toPair = "target switched from one pool to a prefill/decode pair"
	const toOne = "target switched from a prefill/decode pair to one pool"
	for i, step := range []struct {
		cfg           string
		toPair, toOne int
		fresh         []string
	}{
		{pair, 1, 0, []string{"chat@prefill", "chat@decode"}},
		{pair, 1, 0, nil},
		{one, 1, 1, []string{"chat"}},
	} {
		if err := l.SetConfig(ctx, parse(step.cfg)); err != nil {
			t.Fatal(err)
		}
		out := logs.String()
		if n := strings.Count(out, toPair); n != step.toPair {
			t.Errorf("reload %d: %d %q lines, want %d:\n%s", i+1, n, toPair, step.toPair, out)
		}
		if n := strings.Count(out, toOne); n != step.toOne {
			t.Errorf("reload %d: %d %q lines, want %d:\n%s", i+1, n, toOne, step.toOne, out)
		}
		recent := l.Recent()
		for _, k := range step.fresh {
			if rs, ok := recent[k]; !ok || len(rs) != 0 {
				t.Errorf("reload %d: %s has %d decisions (listed %v), want none: its state starts fresh", i+1, k, len(rs), ok)
			}
		}
		l.Cycle(ctx)
	}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(line, "target switched") && (!strings.Contains(line, "level=INFO") || !strings.Contains(line, "target=chat")) {
			t.Errorf("want INFO naming target=chat: %s", line)
		}
	}
}
