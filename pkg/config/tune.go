package config

import (
	"math"
	"os"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/recommend"
)

// Self-tuning defaults (a target's tune: block).
const (
	DefaultTuneEvery   = 24 * time.Hour
	DefaultTuneHistory = 7 * 24 * time.Hour
	DefaultTuneMaxMiss = 0.001
	// MinTuneEvery bounds every: a re-tune replays its history dozens of
	// times, so more often than hourly would spend the cores on tuning.
	MinTuneEvery = time.Hour
	// MaxTuneEvery bounds every as history is bounded: a mistyped 100000h
	// (11 years) would tune once and, in adopt mode, never switch again.
	MaxTuneEvery = 90 * 24 * time.Hour
	// MinTuneHistory bounds history: a shorter one holds too few cold
	// starts to choose a scale-down hold on.
	MinTuneHistory = time.Hour
	// MaxTuneHistory bounds history to what Prometheus usually keeps.
	MaxTuneHistory = 90 * 24 * time.Hour
)

// TuneMode says what serve does with a tuned candidate.
type TuneMode string

const (
	// TuneShadow exports the candidate's decision beside the live one
	// and changes nothing.
	TuneShadow TuneMode = "shadow"
	// TuneAdopt switches the target to a candidate that holds (in and
	// out of sample and under stress), at most once per every, and
	// reverts when live SLO misses exceed max_miss.
	TuneAdopt TuneMode = "adopt"
)

// Tune is a target's tune: block: serve re-tunes the target on its own
// Prometheus history (pkg/tune) in the background.
type Tune struct {
	// Every is how often the target is re-tuned [24h], 1h to 90d; in
	// adopt mode also the least time between two switches.
	Every model.Duration `yaml:"every"`
	// History is the span of history each run tunes on, ending now [7d],
	// 1h to 90d.
	History model.Duration `yaml:"history"`
	// MaxMiss is the miss budget, a fraction of requests (late, unserved
	// or rejected) in [0, 1) [0.001]: the candidate must keep within it
	// in sample, out of sample and under stress, and live TTFT misses
	// above it revert an adopted one.
	MaxMiss *float64 `yaml:"max_miss"`
	// Mode is shadow (export the candidate only) or adopt [shadow].
	Mode TuneMode `yaml:"mode"`
	// SLOTTFT is the TTFT a request must get its first token within [2s].
	SLOTTFT model.Duration `yaml:"slo_ttft"`
	// Dir, when set, is a directory of per-target results (<name>.json,
	// written by `infscale tune --config FILE --shard I/N`) that serve
	// reads instead of tuning in process.
	Dir string `yaml:"dir"`
}

// Budget is MaxMiss or its default.
func (t *Tune) Budget() float64 {
	if t.MaxMiss == nil {
		return DefaultTuneMaxMiss
	}
	return *t.MaxMiss
}

// defaults fills the unset keys.
func (t *Tune) defaults() {
	if t.Every == 0 {
		t.Every = model.Duration(DefaultTuneEvery)
	}
	if t.History == 0 {
		t.History = model.Duration(DefaultTuneHistory)
	}
	if t.Mode == "" {
		t.Mode = TuneShadow
	}
	if t.SLOTTFT == 0 {
		t.SLOTTFT = model.Duration(2 * time.Second)
	}
}

// tune checks target p's tune: block and fills its defaults.
func (v *validator) tune(p string, t *Target) {
	tu := t.Tune
	if tu == nil {
		return
	}
	p += ".tune"
	// A key written as 0 (or "") is a mistake, not the default: every: 0
	// would otherwise re-tune each 24h, history: 0 tune on 7d.
	// dir: "" (an unset variable in a template) would tune in process
	// instead of reading the CronJob's results.
	zero := map[string]bool{"every": tu.Every == 0, "history": tu.History == 0, "slo_ttft": tu.SLOTTFT == 0, "mode": tu.Mode == "", "dir": tu.Dir == ""}
	tu.defaults()
	for _, k := range []string{"every", "history", "slo_ttft", "mode", "dir"} {
		if zero[k] && v.present(p+"."+k) {
			v.at(p+"."+k, "is empty or 0: leave the key out for its default, or give a value (docs/tune.md)")
		}
	}
	if d := time.Duration(tu.Every); d < MinTuneEvery && !v.bad(p+".every") {
		v.at(p+".every", "must be at least %s (each run replays the history dozens of times), got %s", model.Duration(MinTuneEvery), tu.Every)
	} else if d > MaxTuneEvery {
		v.at(p+".every", "must be at most %s (in adopt mode also the least time between two switches), got %s", model.Duration(MaxTuneEvery), tu.Every)
	}
	if d := time.Duration(tu.History); d < MinTuneHistory || d > MaxTuneHistory {
		v.at(p+".history", "must be %s to %s of history, got %s", model.Duration(MinTuneHistory), model.Duration(MaxTuneHistory), tu.History)
	}
	if m := tu.Budget(); !(m >= 0 && m < 1) {
		v.at(p+".max_miss", "must be a fraction of requests in [0, 1), e.g. 0.001 (one in a thousand), got %g", m)
	}
	if tu.Mode != TuneShadow && tu.Mode != TuneAdopt {
		v.at(p+".mode", "must be shadow or adopt, got %q", tu.Mode)
	}
	if tu.SLOTTFT < 0 {
		v.at(p+".slo_ttft", "must be > 0, got %s", tu.SLOTTFT)
	} else if d := time.Duration(tu.SLOTTFT); d > recommend.MaxLatencyTarget {
		v.at(p+".slo_ttft", "%s: must be at most 7d (a week, the bound of a ttft target: the SLO the tuned policy's ttft guard targets would never fire)", tu.SLOTTFT)
	} else if tu.Mode == TuneAdopt && !v.cfg.Prometheus.Embedded() && !v.bad(p+".slo_ttft") {
		v.sloBucket(p+".slo_ttft", t, zero["slo_ttft"] || !v.present(p+".slo_ttft"))
	}
	if tu.Dir != "" {
		// Read at run time (a volume may be mounted later), but a file
		// where the directory goes is a mistake now.
		if fi, err := os.Stat(tu.Dir); err == nil && !fi.IsDir() {
			v.warn(p+".dir", "%s is a file, not a directory: serve reads the results infscale tune --shard writes there (NAME.json) and logs \"tuning failed\" for this target each minute until it is a directory (docs/tune.md)", tu.Dir)
		}
	}
	if v.cfg.Prometheus.Embedded() && tu.Dir == "" {
		v.at(p, "tunes on the target's Prometheus history: needs prometheus.url (or dir: with results written by infscale tune --shard)")
	}
	if t.Replica == nil && !v.bad(p) {
		v.at(p, "needs the target's replica: ({gpu, model[, tp][, calibration]}): the replay runs on it")
	}
}

// sloBucket warns when target t's tune.slo_ttft (at key; defaulted: not
// written) is not a bound of its server's known TTFT buckets: the
// live-miss check counts only the buckets wholly above it
// (tune.LiveMisses), so the requests between it and the next bound are
// not counted late.
func (v *validator) sloBucket(key string, t *Target, defaulted bool) {
	bs := t.Server.TTFTBuckets()
	slo := time.Duration(t.Tune.SLOTTFT)
	if len(bs) == 0 {
		return
	}
	sec := func(b float64) model.Duration { return model.Duration(time.Duration(math.Round(b*1e3) * 1e6)) }
	given := t.Tune.SLOTTFT.String()
	if defaulted {
		given += " (the default)"
	}
	lo := 0.0
	for _, b := range bs {
		if sec(b) == t.Tune.SLOTTFT {
			return
		}
		if slo < time.Duration(sec(b)) {
			v.warn(key, "%s is inside %s's TTFT bucket (%s, %s]: the live-miss check that reverts an adopted candidate counts only the requests above %s as late; give %s or %s, a bucket bound, for an exact count (docs/tune.md)",
				given, t.Server, sec(lo), sec(b), sec(b), sec(lo), sec(b))
			return
		}
		lo = b
	}
	v.warn(key, "%s is above %s's highest TTFT bucket bound, %s: the live-miss check that reverts an adopted candidate counts no request as late; give %s or less (docs/tune.md)",
		given, t.Server, sec(lo), sec(lo))
}
