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
// the progress read 100% at its end, 25 s into a 121 s run; tune --pd on
// 7 days of synthetic:diurnal read 90% at 1.0 s of 10.9 s). Each call's
// done is the seconds of trace replayed so far; the first call's total
// must be at least 80% of the seconds replayed in all (the floor rounds,
// run when no finalist holds or a floor is cheaper, are not expected).
// Without the estimate a day of this trace read 71% (Run) and 52% (RunPD).
func TestProgressExpectsTheWholeSearch(t *testing.T) {
	if testing.Short() {
		t.Skip("tunes a pool and a pair on a day of traffic")
	}
	src, err := trace.ParseContext(context.Background(), "synthetic:diurnal,trough=2,peak=6,duration=1d", trace.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	m, err := replica.New(replica.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		run  func(Config) (replays int, err error)
	}{
		{"Run", func(cfg Config) (int, error) {
			cfg.Baselines = DefaultBaselines
			rep, err := Run(context.Background(), src, cfg)
			return rep.Replays, err
		}},
		{"RunPD", func(cfg Config) (int, error) {
			cfg.Baselines = PDBaselines
			rep, err := RunPD(context.Background(), src, cfg, replay.PDConfig{KVLinkBytesPerSecond: 25e9})
			return rep.Replays, err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			type call struct{ done, total int }
			var calls []call
			replays, err := c.run(Config{Replay: replay.Config{Model: m}, Progress: func(done, total int) {
				mu.Lock()
				calls = append(calls, call{done, total})
				mu.Unlock()
			}})
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) != replays {
				t.Fatalf("%d progress calls, want one per replay (%d)", len(calls), replays)
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
			t.Logf("%d replays; first total %d, last %d of %d", replays, first.total, last.done, last.total)
			if float64(first.total) < 0.8*float64(last.done) {
				t.Errorf("first total %d: want at least 80%% of the search's %d seconds of trace replayed (the later stages expected from the start)", first.total, last.done)
			}
		})
	}
}
