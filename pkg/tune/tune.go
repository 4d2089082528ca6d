// Package tune searches a space of infscale policies for the cheapest one
// that keeps SLO misses within a budget, and chooses by robustness: the
// winner must hold on the held-out last part of the history and on
// stressed copies of it, not only on the part it was chosen on.
//
// Pipeline (Run): split the history in time (in-sample first, held out
// last); screen a coarse grid of policies on the in-sample (or on its
// busiest and steepest windows when it is long); refine around the
// cheapest feasible ones (targets between grid points, neighbouring
// lookaheads and windows); replay the cheapest feasible finalists on the
// whole in-sample, the held-out part, and stressed copies (the screening
// sample and the held-out part at 1.5x and 2x rate and with their bursts
// doubled); the winner is the cheapest finalist (by
// in-sample replica time) within the budget everywhere (Choose). Every
// replay runs on a pool of workers, one per core; results do not depend on
// the parallelism.
package tune

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/trace"
)

// Serve is where the serve block's target reads its series: the tuned
// history's Prometheus base URL, server profile (vllm, sglang, trtllm),
// selector and replicas query, and the target's name. Empty fields (tuning
// on a trace) are printed as placeholders marked "# fill in: ...".
type Serve struct {
	Name, PrometheusURL, Server, Selector, Replicas string
	// From is the serve config file the history's target came from; the
	// block then says to copy that file's other prometheus: keys (auth,
	// TLS, timeout), which it does not print.
	From string
	// Replica is the target's replica: value, a YAML flow mapping such as
	// {gpu: h100-sxm, model: llama-3-8b}, printed when the winner is the
	// demand signal (which divides by its capacity); empty: a placeholder.
	// ReplicaNote, when set, is a comment beside it (e.g. that the
	// replay's replica had settings serve's replica: cannot carry).
	Replica, ReplicaNote string
}

// Block is the candidate as a whole serve configuration file (pkg/config):
// the prometheus section and one target reading s's series, with max
// replicas max. It loads as printed; the placeholders of s's empty fields
// are valid values, each commented with what to fill in.
func (c Candidate) Block(s Serve, max int) string {
	var b strings.Builder
	val := func(v, placeholder, what string) string {
		if v == "" {
			return placeholder + "  # fill in: " + what
		}
		return v
	}
	str := func(v, placeholder, what string) string { // a string, quoted as YAML needs
		if v == "" {
			return val(v, placeholder, what)
		}
		return YAMLScalar(v)
	}
	fmt.Fprintf(&b, "prometheus:\n  url: %s\n", str(s.PrometheusURL, "http://prometheus:9090", "your Prometheus base URL"))
	if s.From != "" {
		fmt.Fprintf(&b, "  # auth, TLS and timeout: copy them from the prometheus: section of %s\n", s.From)
	}
	fmt.Fprintf(&b, "targets:\n- name: %s\n  server: %s\n", str(s.Name, "chat", "a name for the Deployment"),
		str(s.Server, "vllm", "the model server: vllm, sglang or trtllm"))
	fmt.Fprintf(&b, "  selector: %s\n", str(s.Selector, `'{namespace="llm",pod=~"chat-.*"}'`, "the label matchers of the Deployment's series"))
	if s.Replicas != "" {
		fmt.Fprintf(&b, "  replicas: %s\n", YAMLScalar(s.Replicas))
	}
	fmt.Fprintf(&b, "  metrics:\n  - type: %s\n    target: %s\n", c.Metric, strconv.FormatFloat(c.Target, 'g', -1, 64))
	if c.Guard > 0 {
		// The replay's quantiles trail 60 s (replay.Config.TTFTWindow);
		// serve's default window is 3m.
		for _, g := range []struct {
			signal string
			target float64
		}{{"ttft", c.Guard}, {"queuewait", c.Guard / 5}} {
			fmt.Fprintf(&b, "  - type: %s\n    target: %s\n    window: 1m  # the replay's quantile window\n", g.signal, time.Duration(math.Round(g.target*1e9)))
		}
	}
	if c.Metric == "demand" {
		note := ""
		if s.ReplicaNote != "" {
			note = "  # " + s.ReplicaNote
		}
		fmt.Fprintf(&b, "  replica: %s%s\n", val(s.Replica, "{gpu: h100-sxm, model: llama-3-8b}", "your GPU and model (infscale gpu --list)"), note)
	}
	floor := 1.0
	if v, ok := c.Option("min"); ok { // the option's name; its key is minReplicaCount
		floor = v
	}
	fmt.Fprintf(&b, "  minReplicaCount: %s\n  maxReplicaCount: %d\n", strconv.FormatFloat(floor, 'g', -1, 64), max)
	var keys []keyValue
	for _, o := range c.Options {
		switch {
		case o.Key == "minReplicaCount":
		case o.Key == "":
			fmt.Fprintf(&b, "  # %s=%s: serve has no key for this option yet; the replay ran with it\n", o.Name, o.text())
		case o.Value != o.Default:
			v := o.text()
			if o.Duration {
				v += "s"
			}
			keys = append(keys, keyValue{strings.Split(o.Key, "."), v})
		}
	}
	writeKeys(&b, "  ", keys)
	return b.String()
}

// keyValue is one YAML key path and its scalar.
type keyValue struct {
	path  []string
	value string
}

// writeKeys prints kvs as nested block mappings at indent, a shared
// parent once, in the order of first appearance.
func writeKeys(b *strings.Builder, indent string, kvs []keyValue) {
	done := map[string]bool{}
	for _, kv := range kvs {
		k := kv.path[0]
		if done[k] {
			continue
		}
		done[k] = true
		if len(kv.path) == 1 {
			fmt.Fprintf(b, "%s%s: %s\n", indent, k, kv.value)
			continue
		}
		var sub []keyValue
		for _, o := range kvs {
			if o.path[0] == k && len(o.path) > 1 {
				sub = append(sub, keyValue{o.path[1:], o.value})
			}
		}
		fmt.Fprintf(b, "%s%s:\n", indent, k)
		writeKeys(b, indent+"  ", sub)
	}
}

// Figures are one replay's outcome.
type Figures struct {
	Requests       int64   `json:"requests"`
	Misses         int64   `json:"slo_misses"`
	MissPct        float64 `json:"miss_pct"`
	ReplicaMinutes float64 `json:"replica_minutes"`
	Peak           int     `json:"peak"`
}

func figures(rs ...replay.Result) Figures {
	var f Figures
	for _, r := range rs {
		f.Requests += r.Requests
		f.Misses += r.Misses()
		f.ReplicaMinutes += r.ReplicaMinutes()
		f.Peak = max(f.Peak, r.Peak)
	}
	if f.Requests > 0 {
		f.MissPct = 100 * float64(f.Misses) / float64(f.Requests)
	}
	return f
}

// Stress is one stressed copy of the history (the screening sample and
// the held-out part).
type Stress struct {
	// Name labels the column ("x1.5", "bursts x2").
	Name string `json:"name"`
	// Rate compresses time (trace.RateScale); 1 leaves it.
	Rate float64 `json:"rate"`
	// Bursts amplifies bursts (trace.AmplifyBursts, 60 s windows); <= 1
	// leaves them.
	Bursts float64 `json:"bursts"`
	// Gaps stretches every silent gap (no arrival for at least two
	// decision periods) Gaps times as long (StretchGaps); <= 1 leaves
	// them. A copy with no such gap is the history itself.
	Gaps float64 `json:"gaps,omitempty"`
}

// StressError is a stressed copy too compressed to replay: the held-out
// part (Span seconds) at Stress.Rate times its rate spans less than one
// decision Period (seconds).
type StressError struct {
	Stress       Stress
	Span, Period float64
}

func (e *StressError) Error() string {
	return fmt.Sprintf("%s: the held-out part (%gs) at %g times its rate spans less than one period (%gs): at most %g times", e.Stress.Name, e.Span, e.Stress.Rate, e.Period, math.Floor(e.Span/e.Period))
}

// DefaultStress is the history at 1.5x and 2x its rate, with its bursts
// doubled, and with its silent gaps twice as long.
var DefaultStress = []Stress{{Name: "x1.5", Rate: 1.5}, {Name: "x2", Rate: 2}, {Name: "bursts x2", Rate: 1, Bursts: 2}, {Name: "gaps x2", Rate: 1, Gaps: 2}}

// Config is a tuning run's setting.
type Config struct {
	// Replay is the replay's setting (replica model, SLO, period).
	Replay replay.Config
	// MaxMissPct is the miss budget in percent of requests, 0 to 100
	// (0: no miss at all); nil is DefaultMaxMissPct.
	MaxMissPct *float64
	// Holdout is the fraction of the history's span held out at its end
	// [0.25].
	Holdout float64
	// Space is the search space [DefaultSpace]; Stress the stressed copies
	// [DefaultStress].
	Space  Space
	Stress []Stress
	// Finalists is how many candidates are replayed out of sample [3].
	Finalists int
	// Baselines are policy strings replayed in and out of sample beside
	// the winner, for the report (nil: none; the command passes
	// DefaultBaselines).
	Baselines []string
	// ScreenWindows and ScreenWindow are the in-sample excerpts the grid is
	// screened on when the in-sample is longer than their total: the
	// busiest and the steepest windows of ScreenWindow seconds, then
	// evenly spread ones [4, 3600].
	ScreenWindows int
	ScreenWindow  float64
	// Workers is the replays run at once [GOMAXPROCS].
	Workers int
	// Seed draws the burst copies [1].
	Seed uint64
	// Serve is where the printed serve block reads its series (empty
	// fields: placeholders).
	Serve Serve
	// Progress, when set, is called after each replay with the replays done
	// and planned so far (the plan grows by stage).
	Progress func(done, total int)
}

// DefaultMaxMissPct is the miss budget when Config.MaxMissPct is nil: one
// request in a thousand.
const DefaultMaxMissPct = 0.1

// Budget is the miss budget in percent: *MaxMissPct, or DefaultMaxMissPct
// when it is nil.
func (c Config) Budget() float64 {
	if c.MaxMissPct == nil {
		return DefaultMaxMissPct
	}
	return *c.MaxMissPct
}

func (c Config) defaults() Config {
	if c.Holdout == 0 {
		c.Holdout = 0.25
	}
	if len(c.Space.Metrics) == 0 {
		c.Space = DefaultSpace
	}
	if c.Stress == nil {
		c.Stress = DefaultStress
	}
	if c.Finalists == 0 {
		c.Finalists = 3
	}
	if c.ScreenWindows == 0 {
		c.ScreenWindows = 4
	}
	if c.ScreenWindow == 0 {
		c.ScreenWindow = 3600
	}
	if c.Workers == 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	return c
}

// Row is one candidate's figures. Screen is on the screening sample;
// InSample, OutOfSample and Stress are set for the finalists.
type Row struct {
	Policy      string    `json:"policy"`
	Candidate   Candidate `json:"-"`
	Screen      Figures   `json:"screen"`
	InSample    *Figures  `json:"in_sample,omitempty"`
	OutOfSample *Figures  `json:"out_of_sample,omitempty"`
	Stress      []Figures `json:"stress,omitempty"`
	// ScreenStress are the screening sample's stressed copies.
	ScreenStress []Figures `json:"screen_stress,omitempty"`
	// Holds: within the budget in sample, out of sample and under stress.
	Holds bool `json:"holds"`

	screenStress [][]replay.Result // per stress, per screening source
	// Frontier: no screened row has a lower worst miss % (the sample and
	// its stressed copies) at no more replica time.
	Frontier bool `json:"frontier"`
}

// worst is a finalist's highest miss percentage over every replay.
func (r Row) worst() float64 {
	w := r.Screen.MissPct
	for _, f := range append([]*Figures{r.InSample, r.OutOfSample}, ptrs(r.Stress)...) {
		if f != nil {
			w = max(w, f.MissPct)
		}
	}
	return w
}

// screenWorst is the highest miss percentage on the screen and its
// stressed copies.
func (r Row) screenWorst() float64 {
	w := r.Screen.MissPct
	for _, f := range r.ScreenStress {
		w = max(w, f.MissPct)
	}
	return w
}

func ptrs(fs []Figures) []*Figures {
	out := make([]*Figures, len(fs))
	for i := range fs {
		out[i] = &fs[i]
	}
	return out
}

// Choose is tune's robustness rule over evaluated finalists: the row with
// the least in-sample replica time among those within budget (percent)
// in sample, out of sample and on every stressed copy; when none is, the
// row with the lowest worst miss percentage (ties: less replica time).
// ok reports whether the chosen row holds. It sets each row's Holds.
func Choose(rows []Row, budget float64) (best int, ok bool) {
	best = -1
	for i := range rows {
		r := &rows[i]
		r.Holds = r.InSample != nil && r.OutOfSample != nil && r.worst() <= budget
	}
	cost := func(r Row) float64 {
		if r.InSample != nil {
			return r.InSample.ReplicaMinutes
		}
		return r.Screen.ReplicaMinutes
	}
	for i, r := range rows {
		if r.Holds && (best < 0 || cost(r) < cost(rows[best])) {
			best = i
		}
	}
	if best >= 0 {
		return best, true
	}
	for i, r := range rows {
		if r.InSample == nil {
			continue
		}
		if best < 0 || r.worst() < rows[best].worst() || (r.worst() == rows[best].worst() && cost(r) < cost(rows[best])) {
			best = i
		}
	}
	return best, false
}

// Report is a tuning run's outcome.
type Report struct {
	// Policy is the winner as a `simulate --policy` string.
	Policy string `json:"policy"`
	// Holds reports whether the winner kept within the budget everywhere.
	Holds bool `json:"holds"`
	// MaxMissPct is the budget.
	MaxMissPct float64 `json:"max_miss_pct"`
	// InSample and OutOfSample are the winner's figures on the two parts.
	InSample    Figures `json:"in_sample"`
	OutOfSample Figures `json:"out_of_sample"`
	// Stress are the winner's figures on the stressed copies (StressNames).
	Stress      []Figures `json:"stress"`
	StressNames []string  `json:"stress_names"`
	// Split is the second the held-out part starts at; Duration the span.
	Split    float64 `json:"split_s"`
	Duration float64 `json:"duration_s"`
	// Screened names the screening sample.
	Screened string `json:"screened_on"`
	// Finalists are the rows replayed out of sample; Frontier the screened
	// rows no other beats on both misses and replica time; Rows every
	// screened row.
	Finalists []Row `json:"finalists"`
	Frontier  []Row `json:"frontier"`
	Rows      []Row `json:"-"`
	// Target is the winner as a whole serve configuration file (YAML,
	// Candidate.Block).
	Target string `json:"serve_target"`
	// Baselines are Config.Baselines replayed in sample and out of sample
	// beside the winner (llm-d's documented KEDA paths by default): what
	// the tuned policy buys over them on the same history.
	Baselines []Baseline `json:"baselines,omitempty"`
	// Replays counts the replays run.
	Replays int `json:"replays"`

	winner Candidate
}

// Baseline is one baseline policy's figures on the two parts.
type Baseline struct {
	Policy      string  `json:"policy"`
	InSample    Figures `json:"in_sample"`
	OutOfSample Figures `json:"out_of_sample"`
}

// DefaultBaselines are the baselines tune's report replays beside the
// winner: llm-d's four autoscaling signals (docs/llm-d.md).
var DefaultBaselines = replay.LLMDBaselines

// baselines replays each policy on in and out.
func (e *evaluator) baselines(policies []string, in, out trace.Source) ([]Baseline, error) {
	bs := make([]Baseline, len(policies))
	res := make([][2]replay.Result, len(policies))
	var jobs []job
	for i, s := range policies {
		pol, err := replay.ParsePolicy(s)
		if err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
		bs[i].Policy = s
		jobs = append(jobs, job{pol: pol, src: in, out: &res[i][0]}, job{pol: pol, src: out, out: &res[i][1]})
	}
	if err := e.run(jobs); err != nil {
		return nil, err
	}
	for i := range bs {
		bs[i].InSample, bs[i].OutOfSample = figures(res[i][0]), figures(res[i][1])
	}
	return bs, nil
}

// Winner is the chosen candidate.
func (r Report) Winner() Candidate { return r.winner }

// Run tunes on src. Errors: an empty or unreadable trace, an invalid
// setting, or ctx's error.
func Run(ctx context.Context, src trace.Source, cfg Config) (Report, error) {
	cfg = cfg.defaults()
	if !(cfg.Holdout > 0 && cfg.Holdout < 1) {
		return Report{}, fmt.Errorf("holdout %g: want a fraction in (0, 1)", cfg.Holdout)
	}
	budget := cfg.Budget()
	if !(budget >= 0 && budget <= 100) {
		return Report{}, fmt.Errorf("miss budget %g%%: want a percentage from 0 to 100", budget)
	}
	rc := cfg.Replay.Defaults()
	if err := rc.Validate(); err != nil {
		return Report{}, err
	}
	dur := src.Duration
	if dur <= 0 {
		_, last, err := trace.Check(src)
		if err != nil {
			return Report{}, err
		}
		dur = last
	}
	split := math.Round(dur * (1 - cfg.Holdout))
	if err := splitCheck(src, dur, split, cfg.Holdout); err != nil {
		return Report{}, err
	}
	in, out := trace.Window(src, 0, split), trace.Window(src, split, dur)
	out.Duration = dur - split
	for _, s := range cfg.Stress {
		if s.Rate > 1 && (dur-split)/s.Rate < rc.Period {
			return Report{}, &StressError{Stress: s, Span: dur - split, Period: rc.Period}
		}
	}
	cold := cfg.Replay.Model.ColdStart()
	cfg.Space = cfg.Space.forReplica(cfg.Replay.Model.MaxBatch())
	e := &evaluator{ctx: ctx, cfg: cfg, workers: cfg.Workers}

	// Screening sample, and the stressed copies of it and of the held-out
	// part (together the whole history when it is short).
	screen, name, err := screening(in, cfg)
	if err != nil {
		return Report{}, err
	}
	// A stressed copy with nothing to stress (no silent gap to stretch)
	// is its source: alias marks it, and its replays are not run again.
	stress := func(vs []trace.Source, s Stress) ([]trace.Source, bool, error) {
		var out []trace.Source
		same := true
		for _, v := range vs {
			if s.Gaps > 1 {
				g, n, err := StretchGaps(v, s.Gaps, 2*rc.Period)
				if err != nil {
					return nil, false, err
				}
				v, same = g, same && n == 0
			}
			if s.Bursts > 1 {
				v, same = trace.AmplifyBursts(v, s.Bursts, 60, cfg.Seed), false
			}
			if s.Rate > 0 && s.Rate != 1 {
				v, same = trace.RateScale(v, s.Rate), false
			}
			out = append(out, v)
		}
		return out, same, nil
	}
	sets := []stressSet{{srcs: screen}}
	variants := []stressSet{{srcs: []trace.Source{out}}}
	for _, s := range cfg.Stress {
		vs, same, err := stress(screen, s)
		if err != nil {
			return Report{}, err
		}
		sets = append(sets, stressSet{srcs: vs, same: same})
		vo, same, err := stress([]trace.Source{out}, s)
		if err != nil {
			return Report{}, err
		}
		variants = append(variants, stressSet{srcs: vo, same: same})
	}
	// Coarse grid.
	var coarse []Candidate
	for _, m := range cfg.Space.Metrics {
		for _, t := range m.Targets {
			for _, opts := range grid(cfg.Space.Dims, cold) {
				c := Candidate{Metric: m.Name, Target: t, Options: opts}
				if m.Guards {
					c.Guard = rc.SLOTTFT
				}
				coarse = append(coarse, c)
			}
		}
	}
	rows, err := e.screen(coarse, sets)
	if err != nil {
		return Report{}, err
	}
	// Fine: around the cheapest feasible coarse rows.
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.Policy] = true
	}
	var fine []Candidate
	for _, r := range cheapest(rows, budget, cfg.Finalists) {
		for _, c := range neighbours(r.Candidate, cfg.Space, cold) {
			if p := c.Policy(); !seen[p] {
				seen[p] = true
				fine = append(fine, c)
			}
		}
	}
	more, err := e.screen(fine, sets)
	if err != nil {
		return Report{}, err
	}
	rows = append(rows, more...)
	markFrontier(rows)

	// Finalists: in sample, out of sample, stressed.
	sameIn := len(screen) == 1 && screen[0].Duration == in.Duration
	var finals []Row
	tried := map[string]bool{}
	for round := 0; round < 2; round++ {
		var pick []Row
		for _, r := range cheapest(rows, budget, len(rows)) {
			if !tried[r.Policy] && len(pick) < cfg.Finalists {
				tried[r.Policy] = true
				pick = append(pick, r)
			}
		}
		if len(pick) == 0 {
			break
		}
		if err := e.finalists(pick, in, sameIn, variants); err != nil {
			return Report{}, err
		}
		finals = append(finals, pick...)
		if _, ok := Choose(finals, budget); ok {
			break
		}
	}
	if len(finals) == 0 {
		return Report{}, errors.New("tune: no candidate to choose from (empty search space)")
	}
	best, ok := Choose(finals, budget)
	w := finals[best]
	rep := Report{
		Policy: w.Policy, Holds: ok, MaxMissPct: budget, InSample: *w.InSample, OutOfSample: *w.OutOfSample,
		Stress: w.Stress, Split: split, Duration: dur, Screened: name, Finalists: finals, Rows: rows,
		Replays: e.done, winner: w.Candidate,
	}
	for _, s := range cfg.Stress {
		rep.StressNames = append(rep.StressNames, s.Name)
	}
	if len(cfg.Baselines) > 0 {
		if rep.Baselines, err = e.baselines(cfg.Baselines, in, out); err != nil {
			return Report{}, err
		}
		rep.Replays = e.done
	}
	for _, r := range rows {
		if r.Frontier {
			rep.Frontier = append(rep.Frontier, r)
		}
	}
	slices.SortStableFunc(rep.Frontier, func(a, b Row) int { return cmp.Compare(a.Screen.ReplicaMinutes, b.Screen.ReplicaMinutes) })
	rep.Target = w.Candidate.Block(cfg.Serve, max(2*w.InSample.Peak, 8))
	return rep, nil
}

// cheapest returns up to n rows within budget on the screen and its
// stressed copies, cheapest on the screen first; when fewer are, the rows
// with the lowest worst miss percentage fill up.
func cheapest(rows []Row, budget float64, n int) []Row {
	s := slices.Clone(rows)
	slices.SortStableFunc(s, func(a, b Row) int {
		wa, wb := a.screenWorst(), b.screenWorst()
		fa, fb := wa <= budget, wb <= budget
		switch {
		case fa && !fb:
			return -1
		case fb && !fa:
			return 1
		case fa:
			return cmp.Compare(a.Screen.ReplicaMinutes, b.Screen.ReplicaMinutes)
		}
		if c := cmp.Compare(wa, wb); c != 0 {
			return c
		}
		return cmp.Compare(a.Screen.ReplicaMinutes, b.Screen.ReplicaMinutes)
	})
	return s[:min(n, len(s))]
}

// neighbours are the fine stage's candidates around c: the targets halfway
// (geometrically) to the neighbouring grid targets, and for each option
// dimension its value a Step either side and the dimension's other coarse
// and Fine values, one dimension at a time.
func neighbours(c Candidate, sp Space, cold float64) []Candidate {
	var out []Candidate
	for _, m := range sp.Metrics {
		if m.Name != c.Metric {
			continue
		}
		i := slices.Index(m.Targets, c.Target)
		mid := func(a, b float64) float64 {
			v := math.Sqrt(a * b)
			switch {
			case m.Integer:
				v = math.Round(v)
			case m.Round > 0:
				// a whole number of steps, printed without binary noise
				v, _ = strconv.ParseFloat(strconv.FormatFloat(math.Round(v/m.Round)*m.Round, 'f', 6, 64), 64)
			}
			return v
		}
		var ts []float64
		switch {
		case i > 0:
			ts = append(ts, mid(m.Targets[i-1], c.Target))
		case i == 0:
			ts = append(ts, mid(c.Target/2, c.Target))
		}
		if i >= 0 && i+1 < len(m.Targets) {
			ts = append(ts, mid(c.Target, m.Targets[i+1]))
		}
		for _, t := range ts {
			if t > 0 && t != c.Target {
				d := c
				d.Target = t
				out = append(out, d)
			}
		}
	}
	for _, d := range sp.Dims {
		v, ok := c.Option(d.Name)
		if !ok {
			continue
		}
		var vs []float64
		if d.Step > 0 {
			step := d.value(d.Step, cold)
			vs = append(vs, v-step, v+step)
		}
		for _, x := range append(slices.Clone(d.Values), d.Fine...) {
			vs = append(vs, d.value(x, cold))
		}
		var tried []float64
		for _, x := range vs {
			if x >= 0 && x != v && !slices.Contains(tried, x) {
				tried = append(tried, x)
				out = append(out, c.with(d.Name, x))
			}
		}
	}
	return out
}

// markFrontier sets Frontier on the rows no other row beats on the screen
// (a worst miss % over the sample and its stressed copies no higher, and
// no more replica time, one of them strictly); of rows with the same
// figures, the first.
func markFrontier(rows []Row) {
	for i := range rows {
		am, ar := rows[i].screenWorst(), rows[i].Screen.ReplicaMinutes
		rows[i].Frontier = true
		for j, o := range rows {
			bm, br := o.screenWorst(), o.Screen.ReplicaMinutes
			same := bm == am && br == ar
			if (same && j < i) || (bm <= am && br <= ar && !same) {
				rows[i].Frontier = false // beaten, or a tie listed already
				break
			}
		}
	}
}

// screening picks the sample the grid is screened on: the whole in-sample,
// or its busiest, steepest and evenly spread windows.
func screening(in trace.Source, cfg Config) ([]trace.Source, string, error) {
	n, w := cfg.ScreenWindows, cfg.ScreenWindow
	if in.Duration <= float64(n)*w {
		return []trace.Source{in}, "the whole in-sample part", nil
	}
	counts := make([]int, int(math.Ceil(in.Duration/w)))
	if err := each(in, func(q trace.Request) {
		if i := int(q.Arrival / w); i >= 0 && i < len(counts) {
			counts[i]++
		}
	}); err != nil {
		return nil, "", err
	}
	pick := map[int]bool{}
	busiest, steepest := 0, 1
	for i := range counts {
		if counts[i] > counts[busiest] {
			busiest = i
		}
		if i > 0 && steepest < len(counts) && counts[i]-counts[i-1] > counts[steepest]-counts[steepest-1] {
			steepest = i
		}
	}
	pick[busiest] = true
	if steepest < len(counts) {
		pick[steepest] = true
	}
	for k := 0; len(pick) < n && k < len(counts); k++ {
		pick[(k*len(counts)/n+len(counts)/(2*n))%len(counts)] = true
	}
	var idx []int
	for i := range pick {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	// The windows are read into memory once (n x w seconds of requests):
	// a window of a stream would skip everything before it on every pass.
	reqs := make(map[int][]trace.Request, len(idx))
	if err := each(in, func(q trace.Request) {
		if i := int(q.Arrival / w); pick[i] {
			q.Arrival -= float64(i) * w
			reqs[i] = append(reqs[i], q)
		}
	}); err != nil {
		return nil, "", err
	}
	var out []trace.Source
	var names []string
	for _, i := range idx {
		a := float64(i) * w
		out = append(out, trace.FromSlice(fmt.Sprintf("%s [%gs,%gs)", in.Name, a, a+w), w, reqs[i]))
		names = append(names, fmt.Sprintf("%gh", a/3600))
	}
	return out, fmt.Sprintf("%d windows of %gs of the in-sample part (starting at %s)", len(out), w, strings.Join(names, ", ")), nil
}

// each calls f on every request of one pass over src.
// ErrShortTrace is wrapped by Run's error for a trace that cannot be split
// in time into a tuning part and a held-out part that both have requests:
// one request, requests all at one instant, or none on one side of the
// split. The message says which, with the numbers.
var ErrShortTrace = errors.New("trace too short to tune on")

// splitCheck reads src once and returns nil when the tuning part [0,
// split) and the held-out part [split, dur] both have requests, else an
// error wrapping ErrShortTrace that says what the trace is (trace.ErrEmpty
// for no request at all).
func splitCheck(src trace.Source, dur, split, holdout float64) error {
	var n, before int64
	first, last := math.Inf(1), math.Inf(-1)
	if err := each(src, func(q trace.Request) {
		n++
		if q.Arrival < split {
			before++
		}
		first, last = min(first, q.Arrival), max(last, q.Arrival)
	}); err != nil {
		return err
	}
	parts := fmt.Sprintf("tune replays a tuning part (the first %g%% of the trace's span) and judges the winner on a held-out part (the last %g%%), so both need requests", 100*(1-holdout), 100*holdout)
	switch {
	case n == 0:
		return fmt.Errorf("%s: %w", src.Name, trace.ErrEmpty)
	case n == 1:
		return fmt.Errorf("%s: %w: it has one request (arriving at %g s); %s: give a trace of many requests over time", src.Name, ErrShortTrace, first, parts)
	case !(dur > 0) || first == last:
		return fmt.Errorf("%s: %w: its %d requests all arrive at %g s, a span of 0 s; %s", src.Name, ErrShortTrace, n, first, parts)
	case before == 0:
		return fmt.Errorf("%s: %w: the tuning part (0 to %g s) has no request (the %d requests arrive from %g s to %g s); %s", src.Name, ErrShortTrace, split, n, first, last, parts)
	case before == n:
		return fmt.Errorf("%s: %w: the held-out part (%g s to %g s) has no request (the %d requests arrive from %g s to %g s); %s", src.Name, ErrShortTrace, split, dur, n, first, last, parts)
	}
	return nil
}

func each(src trace.Source, f func(trace.Request)) error {
	rd, err := src.Open()
	if err != nil {
		return err
	}
	defer rd.Close()
	for {
		q, err := rd.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		f(q)
	}
}

// evaluator runs replays on a pool of workers.
type evaluator struct {
	ctx     context.Context
	cfg     Config
	workers int
	mu      sync.Mutex
	done    int
	total   int
}

type job struct {
	pol replay.Policy
	src trace.Source
	out *replay.Result
}

func (e *evaluator) run(jobs []job) error {
	e.mu.Lock()
	e.total += len(jobs)
	e.mu.Unlock()
	ch := make(chan job)
	errs := make([]error, e.workers)
	var wg sync.WaitGroup
	for w := range e.workers {
		wg.Go(func() {
			for j := range ch {
				if errs[w] != nil {
					continue
				}
				rc := e.cfg.Replay
				rc.Timeline, rc.Progress = false, nil
				r, err := replay.Run(e.ctx, j.src, j.pol, rc)
				if err != nil {
					errs[w] = err
					continue
				}
				*j.out = r
				e.mu.Lock()
				e.done++
				d, t := e.done, e.total
				e.mu.Unlock()
				if e.cfg.Progress != nil {
					e.cfg.Progress(d, t)
				}
			}
		})
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	return errors.Join(errs...)
}

// stressSet is the sources of one copy (the screening sample, the
// held-out part, or a stressed copy of either); same: the copy is the
// unstressed one (nothing to stress), whose results it reuses.
type stressSet struct {
	srcs []trace.Source
	same bool
}

// screen replays the candidates on the screening sample (sets[0]) and
// its stressed copies (sets[1:]).
func (e *evaluator) screen(cs []Candidate, sets []stressSet) ([]Row, error) {
	res := make([][][]replay.Result, len(cs))
	var jobs []job
	for i, c := range cs {
		p, err := c.replayPolicy()
		if err != nil {
			return nil, err
		}
		res[i] = make([][]replay.Result, len(sets))
		for k, set := range sets {
			if k > 0 && set.same {
				continue
			}
			res[i][k] = make([]replay.Result, len(set.srcs))
			for l, s := range set.srcs {
				jobs = append(jobs, job{pol: p, src: s, out: &res[i][k][l]})
			}
		}
	}
	if err := e.run(jobs); err != nil {
		return nil, err
	}
	rows := make([]Row, len(cs))
	for i, c := range cs {
		rows[i] = Row{Policy: c.Policy(), Candidate: c, Screen: figures(res[i][0]...)}
		for k, r := range res[i][1:] {
			if sets[k+1].same {
				r = res[i][0]
			}
			rows[i].screenStress = append(rows[i].screenStress, r)
			rows[i].ScreenStress = append(rows[i].ScreenStress, figures(r...))
		}
	}
	return rows, nil
}

// finalists replays rows on the whole in-sample part (unless the screen
// was it) and on every variant of the held-out part.
func (e *evaluator) finalists(rows []Row, in trace.Source, sameIn bool, variants []stressSet) error {
	type out struct {
		in   replay.Result
		vars [][]replay.Result
	}
	res := make([]out, len(rows))
	var jobs []job
	for i, r := range rows {
		p, err := r.Candidate.replayPolicy()
		if err != nil {
			return err
		}
		res[i].vars = make([][]replay.Result, len(variants))
		if !sameIn {
			jobs = append(jobs, job{pol: p, src: in, out: &res[i].in})
		}
		for k, vs := range variants {
			if k > 0 && vs.same {
				continue
			}
			res[i].vars[k] = make([]replay.Result, len(vs.srcs))
			for l, v := range vs.srcs {
				jobs = append(jobs, job{pol: p, src: v, out: &res[i].vars[k][l]})
			}
		}
	}
	if err := e.run(jobs); err != nil {
		return err
	}
	for i := range rows {
		f := rows[i].Screen
		if !sameIn {
			f = figures(res[i].in)
		}
		o := figures(res[i].vars[0]...)
		rows[i].InSample, rows[i].OutOfSample = &f, &o
		for k, v := range res[i].vars[1:] {
			if variants[k+1].same {
				v = res[i].vars[0]
			}
			rows[i].Stress = append(rows[i].Stress, figures(append(slices.Clone(rows[i].screenStress[k]), v...)...))
		}
	}
	return nil
}
