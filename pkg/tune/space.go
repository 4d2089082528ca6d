package tune

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/replay"
)

// MetricSpace is one signal of the search space and its coarse targets in
// the signal's unit (requests per replica for queue and running, the
// utilisation of one replica's modelled capacity for demand: its
// headroom is 1 - target). The fine stage tries the geometric midpoints
// between neighbouring targets.
type MetricSpace struct {
	// Name is the signal as a policy string spells it (queue, running, ...).
	Name string
	// Targets are the coarse grid, ascending, > 0.
	Targets []float64
	// Integer rounds refined targets to whole numbers (request counts).
	Integer bool
	// PerBatch: Targets are fractions of the replica's batch slots
	// (MaxBatch), so the grid follows the replica.
	PerBatch bool
	// Round rounds refined targets to a multiple of it (0: not rounded).
	Round float64
	// Guards: each candidate carries what recommended adds to its demand
	// signal: the latency guards, ttft at the replay's TTFT SLO and
	// queuewait at a fifth of it (the highest recommendation wins), the
	// cost-aware hold at replay.RecommendedBreakEven cold starts and the
	// ramp bound recommend.RampBoundFor(cold start, the candidate's
	// scale-down window) (Candidate.recommendedRules).
	Guards bool
}

// Unit is what a Dim's values are counted in.
type Unit int

const (
	// Count values are used as they are (replicas, a ratio).
	Count Unit = iota
	// Seconds values are seconds.
	Seconds
	// ColdStarts values are multiples of the replica's cold start, rounded
	// up to whole seconds, so the grid follows the replica.
	ColdStarts
)

// Dim is one option dimension of the search space: a policy-string option
// (PolicySyntax's OPTION=VALUE, applied with replay.SetOption) and the
// values the search tries. A new decision rule's parameter joins the
// search with one Dim line, e.g.
//
//	{Name: "lookahead", Unit: ColdStarts, Values: []float64{0, 1}, Step: 0.5, Default: 0, Key: "lookahead"},
type Dim struct {
	// Name is the option as a policy string spells it (min, downwindow).
	Name string
	// Unit is what Values, Fine and Step are in.
	Unit Unit
	// Values are the coarse grid: every candidate of the grid takes one.
	Values []float64
	// Fine are values the fine stage also tries around a finalist; Step,
	// when > 0, the distance either side of its value it tries.
	Fine []float64
	Step float64
	// Default is the policy's own value of the option: a candidate at it
	// leaves the option out of its policy string.
	Default float64
	// Key is the option's key in a serve target, dotted for a nested one
	// (behavior.scaleDown.stabilizationWindowSeconds); a key not ending in
	// Seconds is printed as a duration (46s) when Unit is not Count. "":
	// the option has no serve key, and the serve block says so.
	Key string
}

// Space is the search space: the signals and their targets, crossed with
// every option dimension's coarse values.
type Space struct {
	Metrics []MetricSpace
	Dims    []Dim
	// FixedFloor skips the floor rounds (floorSearch, cheaperFloor): the
	// min dimension's values are the target's own (scaleToZero).
	FixedFloor bool
}

// DefaultSpace is tune's default search space: the demand signal at 50%,
// 70% and 90% of one replica's modelled capacity (headroom 50% to 10%,
// refined in steps of 0.05) with the latency guards recommended carries;
// queue targets from an eighth to all of the replica's batch slots (8 to
// 64 on the reference replica); running targets from a quarter to three
// quarters; crossed with a floor (min) of 1 or 2 replicas (3 in the fine
// stage), no lookahead or one cold start (half a cold start either side
// in the fine stage), and a scale-down hold (the HPA's scale-down
// stabilizationWindowSeconds) of 1 or 4 cold starts (half and 2 in the
// fine stage): 80 coarse candidates.
var DefaultSpace = Space{
	Metrics: []MetricSpace{
		{Name: "demand", Targets: []float64{0.5, 0.7, 0.9}, Round: 0.05, Guards: true},
		{Name: "queue", Targets: []float64{0.125, 0.25, 0.5, 1}, Integer: true, PerBatch: true},
		{Name: "running", Targets: []float64{0.25, 0.5, 0.75}, Integer: true, PerBatch: true},
	},
	Dims: []Dim{
		{Name: "min", Unit: Count, Values: []float64{1, 2}, Fine: []float64{3}, Default: 1, Key: "minReplicaCount"},
		{Name: "lookahead", Unit: ColdStarts, Values: []float64{0, 1}, Step: 0.5, Default: 0, Key: "lookahead"},
		{Name: "downwindow", Unit: ColdStarts, Values: []float64{1, 4}, Fine: []float64{0.5, 2}, Default: -1, Key: "behavior.scaleDown.stabilizationWindowSeconds"},
	},
}

// scaleToZero is sp for a target that scales to zero (minReplicaCount 0,
// its zero: block's cooldownPeriod cooldown): every candidate keeps min 0
// and the cooldown, so the replays go to zero after cooldown idle and
// wake on the next request, a cold start later, as the target does; a
// floor would not scale to zero (serve rejects such a candidate), and
// replayed at a floor of 1 a candidate's idle replica-minutes and wake-up
// misses were never counted.
func (sp Space) scaleToZero(cooldown time.Duration) Space {
	out := sp
	out.Dims = nil
	for _, d := range sp.Dims {
		if d.Name != "min" {
			out.Dims = append(out.Dims, d)
		}
	}
	out.Dims = append(out.Dims,
		Dim{Name: "min", Unit: Count, Values: []float64{0}, Default: 1, Key: "minReplicaCount"},
		Dim{Name: "cooldown", Unit: Seconds, Values: []float64{replayedCooldown(cooldown)}, Default: -1, Key: "zero.cooldownPeriod"})
	out.FixedFloor = true
	return out
}

// capped is sp for a target whose maxReplicaCount is maxReplicas: every
// candidate is replayed with max=maxReplicas, as the target decides under
// its own max (Candidate.Adapt keeps it), and a floor above it is not
// tried. Replayed at the policy's default max (100), a candidate held by
// reaching 12 replicas was written "holds" for a target that may run 1.
// The option is always written (Default -1), so a result records the max
// it was tuned under (TargetResult.Matches).
func (sp Space) capped(maxReplicas int) Space {
	out := sp
	out.Dims = nil
	m := replayedMax(maxReplicas)
	over := func(v float64) bool { return v > m }
	for _, d := range sp.Dims {
		if d.Name == "min" {
			d.Values = slices.DeleteFunc(slices.Clone(d.Values), over)
			d.Fine = slices.DeleteFunc(slices.Clone(d.Fine), over)
		}
		out.Dims = append(out.Dims, d)
	}
	out.Dims = append(out.Dims, Dim{Name: "max", Unit: Count, Values: []float64{m}, Default: -1, Key: "maxReplicaCount"})
	return out
}

// replayedMax is the max= a maxReplicaCount n is replayed with: n, at most
// replay.MaxReplicas (the replay's fleet bound; serve takes up to the
// HPA's int32, and max=2147483647 is refused by the replay).
func replayedMax(n int) float64 { return float64(min(n, replay.MaxReplicas)) }

// ZeroSpace is DefaultSpace for a target that scales to zero with
// cooldownPeriod cooldown (scaleToZero): tune --config FILE --target NAME
// tunes it as tune --shard and serve do.
func ZeroSpace(cooldown time.Duration) Space { return DefaultSpace.scaleToZero(cooldown) }

// maxCooldown is replay's bound on cooldown= in seconds (a year): serve
// takes a cooldownPeriod up to KEDA's int32 seconds, but one longer than
// the history (90 days at most) never ends in a replay, as a year's.
const maxCooldown = 365 * 86400

// replayedCooldown is the cooldown= a cooldownPeriod d is replayed with:
// in seconds to the millisecond (the config's precision, which serve
// decides on: 1500ms at pollingInterval 1500ms is one idle decision, not
// the two of a whole 2 s), at most maxCooldown.
func replayedCooldown(d time.Duration) float64 {
	return min(float64(d.Round(time.Millisecond).Milliseconds())/1000, maxCooldown)
}

// forReplica turns PerBatch targets into the replica's units.
func (sp Space) forReplica(maxBatch int) Space {
	out := sp
	out.Metrics = nil
	for _, m := range sp.Metrics {
		if m.PerBatch {
			var ts []float64
			for _, t := range m.Targets {
				v := t * float64(maxBatch)
				if m.Integer {
					v = max(math.Round(v), 1)
				}
				if !slices.Contains(ts, v) {
					ts = append(ts, v)
				}
			}
			m.Targets, m.PerBatch = ts, false
		}
		out.Metrics = append(out.Metrics, m)
	}
	return out
}

// value is v of d in the option's own unit: cold starts become whole
// seconds (rounded up).
func (d Dim) value(v, cold float64) float64 {
	if d.Unit == ColdStarts {
		return math.Ceil(v * cold)
	}
	return v
}

// option is d at v (already in the option's unit).
func (d Dim) option(v float64) Option {
	return Option{Name: d.Name, Value: v, Default: d.Default, Key: d.Key, Duration: d.Unit != Count && !strings.HasSuffix(d.Key, "Seconds")}
}

// grid is every combination of the dims' coarse values, cold starts
// resolved to seconds; a combination is listed once.
func grid(dims []Dim, cold float64) [][]Option {
	out := [][]Option{nil}
	for _, d := range dims {
		var next [][]Option
		for _, prefix := range out {
			var seen []float64
			for _, v := range d.Values {
				x := d.value(v, cold)
				if slices.Contains(seen, x) {
					continue
				}
				seen = append(seen, x)
				next = append(next, append(slices.Clone(prefix), d.option(x)))
			}
		}
		out = next
	}
	return out
}

// Option is one option of a candidate, in the option's own unit
// (replicas, seconds).
type Option struct {
	// Name is the policy-string option; Value its value.
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Default is the policy's own value: the policy string leaves the
	// option out at it.
	Default float64 `json:"default"`
	// Key is the serve target's key ("" none); Duration prints the value
	// as a duration (46s).
	Key      string `json:"key,omitempty"`
	Duration bool   `json:"duration,omitempty"`
}

func (o Option) text() string { return strconv.FormatFloat(o.Value, 'g', -1, 64) }

// Candidate is one point of the space.
type Candidate struct {
	Metric string  `json:"metric"`
	Target float64 `json:"target"`
	// Guard is the latency guards' TTFT target in seconds: ttft at it and
	// queuewait at a fifth of it beside Metric; 0: none.
	Guard float64 `json:"guard,omitempty"`
	// Hold is the cost-aware hold's break-even in seconds (0: off) and
	// RampBound the demand trend's bound in standard errors, as
	// recommended sets them for the replica (recommendedRules).
	Hold      float64 `json:"hold,omitempty"`
	RampBound float64 `json:"ramp_bound,omitempty"`
	// Options are the space's option values, in its Dims' order.
	Options []Option `json:"options"`
}

// Option is c's value of the named option and whether c has it.
func (c Candidate) Option(name string) (float64, bool) {
	for _, o := range c.Options {
		if o.Name == name {
			return o.Value, true
		}
	}
	return 0, false
}

// with is c with the named option at v (a copy).
func (c Candidate) with(name string, v float64) Candidate {
	c.Options = slices.Clone(c.Options)
	for i := range c.Options {
		if c.Options[i].Name == name {
			c.Options[i].Value = v
		}
	}
	return c
}

// Policy is the candidate as a `simulate --policy` string, e.g.
// demand:0.9,min=2,lookahead=91,downwindow=364,ttft:2,queuewait:0.4; an
// option at the policy's own default is left out.
func (c Candidate) Policy() string {
	s := c.Metric + ":" + strconv.FormatFloat(c.Target, 'g', -1, 64)
	for _, o := range c.Options {
		if o.Value != o.Default {
			s += "," + o.Name + "=" + o.text()
		}
	}
	if c.Hold > 0 {
		s += ",hold=" + strconv.FormatFloat(c.Hold, 'g', -1, 64)
	}
	if c.RampBound > 0 {
		s += ",rampbound=" + strconv.FormatFloat(c.RampBound, 'g', 4, 64)
	}
	if c.Guard > 0 {
		s += ",ttft:" + strconv.FormatFloat(c.Guard, 'g', -1, 64) + ",queuewait:" + strconv.FormatFloat(c.Guard/5, 'g', -1, 64)
	}
	return s
}

// recommendedRules sets c's Hold and RampBound as recommended sets them
// for a replica of cold start cold seconds: a break-even of
// replay.RecommendedBreakEven cold starts, and the ramp bound at the
// newsvendor's quantile of cold / (cold + c's scale-down window, the HPA's
// 300 s when c leaves it out), with a lookahead only (it bounds the
// lookahead's projection). A candidate without guards gets neither.
func (c *Candidate) recommendedRules(cold float64) {
	if c.Guard <= 0 {
		return
	}
	cs := math.Ceil(cold)
	c.Hold = replay.RecommendedBreakEven * cs
	if v, ok := c.Option("lookahead"); !ok || v <= 0 {
		c.RampBound = 0 // the bound shapes the lookahead's projection: none without one
		return
	}
	down := 300.0
	if v, ok := c.Option("downwindow"); ok && v >= 0 {
		down = v
	}
	c.RampBound = recommend.RampBoundFor(time.Duration(cs)*time.Second, time.Duration(down)*time.Second)
	// As the policy string prints it, so that a candidate replays as written.
	c.RampBound, _ = strconv.ParseFloat(strconv.FormatFloat(c.RampBound, 'g', 4, 64), 64)
}

// Recommend is the candidate as a pkg/recommend policy (min 1 and max
// recommend.DefaultMax unless an option sets them), not yet validated.
// Errors: an unknown signal or option, or a value an option does not take.
func (c Candidate) Recommend() (*recommend.Policy, error) {
	sig, err := recommend.ParseSignal(c.Metric)
	if err != nil {
		return nil, err
	}
	p := &recommend.Policy{Min: 1, Max: recommend.DefaultMax, Metrics: []recommend.Metric{{Signal: sig, Target: c.Target}}}
	if c.Guard > 0 {
		p.Metrics = append(p.Metrics, recommend.Metric{Signal: recommend.SignalTTFT, Target: c.Guard},
			recommend.Metric{Signal: recommend.SignalQueueWait, Target: c.Guard / 5})
	}
	for _, o := range c.Options {
		if err := replay.SetOption(p, o.Name, o.text()); err != nil {
			return nil, fmt.Errorf("option %s=%s: %w", o.Name, o.text(), err)
		}
	}
	if c.Hold > 0 {
		p.Hold = &recommend.Hold{BreakEven: time.Duration(c.Hold * float64(time.Second))}
	}
	p.RampBound = c.RampBound
	return p, nil
}

// replayPolicy is the candidate as a replay policy, built directly (no
// policy string round trip). Errors: Recommend's and the policy's
// validation.
func (c Candidate) replayPolicy() (replay.Policy, error) {
	p, err := c.Recommend()
	if err != nil {
		return replay.Policy{}, fmt.Errorf("tune: search space: %s: %w", c.Policy(), err)
	}
	return replay.FromRecommend(c.Policy(), p)
}
