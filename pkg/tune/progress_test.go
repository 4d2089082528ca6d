package tune

import (
	"context"
	"sync"
	"testing"

	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/trace"
)

// TestProgressExpectsTheWholeSearch: Config.Progress's total is the whole
// search's replay work from the first call, not the stages planned so
// far: the screen, planned first, is a small part of a search whose
// finalists and baselines replay the whole history (on synth-week's
// week the screen was 3.65 million of 9.75 million seconds of trace, and
// the progress read 100% at its end, 25 s into a 121 s run). Each call's
// done is the seconds of trace replayed so far.
func TestProgressExpectsTheWholeSearch(t *testing.T) {
	if testing.Short() {
		t.Skip("tunes on a day of traffic")
	}
	src, err := trace.Parse("synthetic:diurnal,trough=2,peak=6,duration=1d", trace.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	type call struct{ done, total int }
	var calls []call
	m, err := replica.New(replica.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), src, Config{Replay: replay.Config{Model: m}, Baselines: DefaultBaselines, Progress: func(done, total int) {
		mu.Lock()
		calls = append(calls, call{done, total})
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != rep.Replays {
		t.Fatalf("%d progress calls, want one per replay (%d)", len(calls), rep.Replays)
	}
	// Workers report as they finish: calls may come out of order.
	first, last := calls[0], calls[0]
	for i, c := range calls {
		if c.done > c.total {
			t.Fatalf("call %d: done %d of %d: want within the total", i, c.done, c.total)
		}
		if c.done > last.done {
			last = c
		}
	}
	t.Logf("%d replays; first total %d, last %d of %d", rep.Replays, first.total, last.done, last.total)
	if float64(first.total) < 0.8*float64(last.done) {
		t.Errorf("first total %d: want at least 80%% of the search's %d seconds of trace replayed (the later stages expected from the start)", first.total, last.done)
	}
}

// TestPDProgressExpectsTheWholeSearch: RunPD's Progress had only the
// stages planned so far as its total, so the line read 90% when the
// screen ended and then sat at 99% while the finalists and baselines
// replayed the whole history: tune --pd on synthetic:diurnal for 7 days
// printed 90% at 1.0 s of a 10.9 s run and nothing more until the end.
// As for Run: the first call's total is the whole search's expected
// work, at least 80% of the seconds of trace it replays in all (the
// floor rounds, run when no finalist holds or a floor is cheaper, are
// not expected; on a day of this trace they are none or few).
func TestPDProgressExpectsTheWholeSearch(t *testing.T) {
	if testing.Short() {
		t.Skip("tunes a pair on a day of traffic")
	}
	src, err := trace.Parse("synthetic:diurnal,trough=2,peak=6,duration=1d", trace.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	m, err := replica.New(replica.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	type call struct{ done, total int }
	var calls []call
	rep, err := RunPD(context.Background(), src, Config{Replay: replay.Config{Model: m}, Baselines: PDBaselines, Progress: func(done, total int) {
		mu.Lock()
		calls = append(calls, call{done, total})
		mu.Unlock()
	}}, replay.PDConfig{KVLinkBytesPerSecond: 25e9})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != rep.Replays {
		t.Fatalf("%d progress calls, want one per replay (%d)", len(calls), rep.Replays)
	}
	first, last := calls[0], calls[0]
	for i, c := range calls {
		if c.done > c.total {
			t.Fatalf("call %d: done %d of %d: want within the total", i, c.done, c.total)
		}
		if c.done > last.done {
			last = c
		}
	}
	t.Logf("%d replays; first total %d, last %d of %d", rep.Replays, first.total, last.done, last.total)
	if float64(first.total) < 0.8*float64(last.done) {
		t.Errorf("first total %d: want at least 80%% of the search's %d seconds of trace replayed (the finalists and baselines expected from the start)", first.total, last.done)
	}
}
