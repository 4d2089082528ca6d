package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/infscale/infscale/internal/quantity"
	"github.com/infscale/infscale/internal/status"
	"github.com/infscale/infscale/pkg/backtest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/trace"
	"github.com/infscale/infscale/pkg/tune"
)

// tuneProgress is tune's progress line (tune: replays: 40%): the share of
// the search's replay work done (tune.Config.Progress), never 100% before
// the search returns: the floor rounds, run when no finalist holds, are
// not in the estimate, and a plain line's "still working" stops at 100%.
type tuneProgress struct{ *status.Progress }

// newTuneProgress is tune's progress under label on w (nothing when quiet).
func newTuneProgress(w io.Writer, label string, quiet bool) tuneProgress {
	return tuneProgress{status.NewProgress(w, label, 1, quiet)}
}

// replays is tune.Config.Progress: done of total, shown as at most 99%
// (the line never goes back).
func (p tuneProgress) replays(done, total int) {
	p.Set(min(float64(done)/float64(total), 0.995))
}

// end ends the line after the search: 100% when it returned a result
// (err nil), then Done.
func (p tuneProgress) end(err error) {
	if err == nil {
		p.Set(1)
	}
	p.Done()
}

// TuneCmd is `infscale tune`: search policies on a trace or a target's
// Prometheus history for the cheapest one within a miss budget that also
// holds out of sample and under stress (pkg/tune).
type TuneCmd struct {
	Trace                string `name:"trace" placeholder:"SPEC" help:"Tune on a trace (as infscale simulate --trace: reference, synthetic:..., or a file) instead of Prometheus history."`
	PrometheusRangeFlags `embed:"" set:"configuse=; the search replays its history, not its policy"`
	PairSelectFlags      `embed:""`
	ReplicaFlags         `embed:""`

	MaxMiss   percent       `name:"max-miss" default:"0.1" placeholder:"P" help:"Miss budget in percent of requests, 0 to 100, with or without %, e.g. 0.1 or 0.1% (one in a thousand; 0: no miss at all): the winner must stay within it in sample, out of sample and on every stressed copy (default ${default}; with --config, the target's tune: block's max_miss)."`
	Holdout   float64       `name:"holdout" default:"0.25" placeholder:"F" help:"Fraction of the history's span held out at its end (the out-of-sample part; default ${default})."`
	Finalists int           `name:"finalists" default:"3" placeholder:"N" help:"Candidates replayed out of sample and under stress (cheapest within budget on the screen; default ${default}); the floor searches' probes are replayed and listed as finalists too."`
	Stress    []string      `name:"stress" placeholder:"S" help:"Stressed copies the winner must hold on too, comma-separated or repeated: rate:K (the history at K times its rate), bursts:K (its bursts K times as high), gaps:K (its silent gaps of two periods or more K times as long), or none (default ${default_stress})."`
	Workers   int           `name:"workers" placeholder:"N" help:"Replays at once (default: the number of cores)."`
	SLOTTFT   time.Duration `name:"slo-ttft" default:"2s" placeholder:"D" help:"TTFT SLO: a request misses when its first token comes later (default ${default}; with --config, the target's tune: block's slo_ttft)."`
	Period    time.Duration `name:"period" default:"15s" placeholder:"D" help:"How often the simulated policies decide (default ${default})."`
	Seed      uint64        `name:"seed" default:"1" help:"Seed of generated traces, of the arrivals within a history step and of the burst copies."`
	RateScale float64       `name:"rate-scale" default:"1" help:"With --trace: compress time by this factor, at most the trace's span / --period (as simulate)."`
	Window    string        `name:"window" placeholder:"A:B" help:"With --trace: tune on [START:END) of the trace only (as simulate), e.g. 0:5d."`
	Sort      bool          `name:"sort" help:"With --trace: accept a trace file whose rows are out of time order (sorted in memory, as simulate)."`
	Plot      string        `name:"plot" placeholder:"FILE" help:"Draw the screened policies (misses against replica-minutes), the frontier and the winner to FILE (.png or .svg)."`
	Output    string        `name:"output" short:"o" default:"text" enum:"text,json" help:"Output format: text or json."`
	Quiet     bool          `name:"quiet" short:"q" help:"No progress on stderr (otherwise one line redrawn on a terminal, a plain line every 10% or 10 s on a redirected stderr)."`
	PD        bool          `name:"pd" help:"With --trace: tune a prefill/decode (P/D) pair of the replica (docs/llm-d.md): each role's demand target of the pair rule, recommended(prefill=TP,decode=TD), on the same split, stress and rule, and when no pair holds each role's floor (prefill_min, decode_min) raised to its peak and bisected; baselines recommended and the llm-d paths per role. With --prometheus-url: the history is a pair's, each pool's series --selector's with --role-label prefill or decode, or its own --prefill-selector / --decode-selector (as backtest --pd). A --config target with roles: is tuned so on its history without the flag."`
	KVLink    string        `name:"kv-link" default:"25GB" help:"With --pd or a pair target: the link that moves a prompt's KV from prefill to decode, bytes per second (as simulate --pd)."`
	Shard     string        `name:"shard" placeholder:"I/N" help:"With --config: tune shard I of N of the config's targets with a tune: block (/N: I from JOB_COMPLETION_INDEX), each on its own tune.history, and write each result to --out or its tune.dir as NAME.json."`
	Out       string        `name:"out" placeholder:"DIR" help:"With --shard: the directory the results are written to (default: each target's tune.dir)."`
}

// Run checks the flags, reads the source and tunes.
func (c *TuneCmd) Run(e *env) error {
	if c.Shard != "" || e.given["out"] {
		if c.Shard == "" {
			return invalidf("--out goes with --shard I/N")
		}
		return c.runShard(e)
	}
	if !(c.MaxMiss >= 0 && c.MaxMiss <= 100) {
		return invalidf("--max-miss %g: want a percentage from 0 to 100 (0.1 is one request in a thousand; 0 allows no miss)", c.MaxMiss)
	}
	if !(c.Holdout > 0 && c.Holdout < 1) {
		return invalidf("--holdout %g: want a fraction more than 0 and less than 1 (the share of the span held out at its end), e.g. 0.25", c.Holdout)
	}
	if c.Finalists < 1 {
		return invalidf("--finalists %d: want at least 1", c.Finalists)
	}
	if err := checkWorkers(c.Workers); err != nil {
		return err
	}
	if c.SLOTTFT <= 0 {
		return invalidf("--slo-ttft %v: want a duration > 0", c.SLOTTFT)
	}
	if err := sloTTFTAtMost(c.SLOTTFT); err != nil {
		return err
	}
	if c.Period < time.Duration(replay.MinPeriod*float64(time.Second)) {
		return invalidf("--period %v: want at least %gs (policies observe what a scrape shows)", c.Period, replay.MinPeriod)
	}
	switch {
	case !c.PD && e.given["kv-link"] && c.PrometheusRangeFlags.Config == "":
		return invalidf("--kv-link goes with --pd")
	}
	stress, err := parseStress(c.Stress, e.given["stress"])
	if err != nil {
		return err
	}
	format, err := plotFileFormat(c.Plot)
	if err != nil {
		return err
	}
	var model *replica.Replica
	src, requests, serve, err := c.source(e, func(r *config.Replica) (err error) {
		c.fromTarget(r, true)
		if model, err = c.Replica(); err != nil {
			return err
		}
		// --kv-link before a pair's history is read (runPD uses it).
		_, err = kvLink(c.KVLink, model)
		return err
	})
	if err != nil {
		return err
	}
	if c.PD {
		return c.runPD(e, src, requests, stress, model, format)
	}
	serve.Replica, serve.ReplicaNote = c.serveReplica(model)
	var space tune.Space // the default
	if serve.Zero != nil {
		space = tune.ZeroSpace(time.Duration(serve.Zero.Cooldown))
	}
	prog := newTuneProgress(e.stderr, "tune: replays", c.Quiet)
	var shed []string         // said after the progress line, as simulate says them
	var notes strings.Builder // the memory budget's, said there too
	rep, err := tune.Run(e.ctx, src, tune.Config{
		Requests:   requests,
		Space:      space,
		Replay:     replay.Config{Model: model, SLOTTFT: c.SLOTTFT.Seconds(), Period: c.Period.Seconds(), Size: replaySizer(&notes)},
		MaxMissPct: (*float64)(&c.MaxMiss), Holdout: c.Holdout, Finalists: c.Finalists, Workers: c.Workers, Seed: c.Seed, Serve: serve, Stress: stress,
		Baselines: tune.DefaultBaselines,
		Progress:  prog.replays,
		Warn:      func(msg string) { shed = append(shed, msg) },
	})
	prog.end(err)
	fmt.Fprint(e.stderr, notes.String())
	for _, msg := range shed {
		fmt.Fprintf(e.stderr, "warning: %s\n", msg)
	}
	if err != nil {
		if se := (*tune.StressError)(nil); errors.As(err, &se) {
			return stressInvalid(e.given, err)
		}
		return tuneRunError(err, c.Trace)
	}
	if c.Plot != "" {
		if err := writeRendered(c.Plot, func(w io.Writer) error { return rep.Plot(w, format) }); err != nil {
			return fmt.Errorf("--plot %s: %w", c.Plot, err)
		}
		fmt.Fprintf(e.stderr, "plot: wrote %s\n", c.Plot) // as simulate and backtest say it
	}
	if c.Output == "json" {
		return rep.WriteJSON(e.stdout)
	}
	return rep.WriteText(e.stdout, src.Name)
}

// tuneRunError is the error tune.Run or tune.RunPD ended with, as tune
// returns it: an empty or too short trace, or a generated one that drew
// past its bound (the spec to lower: trace.ErrGeneratedBound), is the
// user's input (exit 2), named "--trace: " as simulate names a bad trace
// when spec (--trace) is not empty; anything else a runtime failure.
func tuneRunError(err error, spec string) error {
	if errors.Is(err, trace.ErrEmpty) || errors.Is(err, tune.ErrShortTrace) || errors.Is(err, trace.ErrGeneratedBound) {
		if spec != "" {
			return invalidf("--trace: %v", err)
		}
		return invalid(err)
	}
	return fmt.Errorf("tune: %w", err)
}

// source is --trace (as simulate reads it) or the Prometheus history (as
// backtest reads it), the requests simulate's read counted (its source:
// a file or a --window; 0 otherwise), and where the printed serve config
// reads the target's series (the history's; empty for a trace). replica is called
// once the flags are checked and before the history is fetched, with the
// --config target's replica: (nil: none).
func (c *TuneCmd) source(e *env, replica func(*config.Replica) error) (trace.Source, int64, tune.Serve, error) {
	hist := c.PrometheusURL != "" || c.PrometheusRangeFlags.Config != ""
	switch {
	case c.Trace != "" && hist:
		return trace.Source{}, 0, tune.Serve{}, invalidf("--trace and --prometheus-url/--config: tune on one source, a trace or a target's history")
	case c.Trace != "":
		if name := historyGiven(e.given); name != "" {
			return trace.Source{}, 0, tune.Serve{}, invalidf("--%s chooses a Prometheus history; with --trace it would be ignored (give one source)", name)
		}
		if err := replica(nil); err != nil {
			return trace.Source{}, 0, tune.Serve{}, err
		}
		sim := SimulateCmd{Trace: c.Trace, Seed: c.Seed, Sort: c.Sort, RateScale: c.RateScale, Window: c.Window, Period: c.Period}
		src, requests, err := sim.source(e.ctx, e.stderr)
		if err == nil {
			err = checkPeriodSpan(e.given, c.Period, src.Duration)
		}
		return src, requests, tune.Serve{}, err
	case !hist:
		return trace.Source{}, 0, tune.Serve{}, invalidf("no source: give --trace SPEC, or --prometheus-url URL --selector ... (or --config FILE --target NAME) for a target's history")
	case c.RateScale != 1 || c.Window != "" || c.Sort:
		return trace.Source{}, 0, tune.Serve{}, invalidf("--rate-scale, --window and --sort apply to --trace; for history choose --start and --end")
	}
	c.PrometheusRangeFlags.pair, c.PrometheusRangeFlags.pairPD = &c.PairSelectFlags, c.PD
	res, err := c.resolve(e.given, e.stderr)
	if err == nil {
		err = checkPeriodSpan(e.given, c.Period, res.grid.End().Sub(res.grid.Start).Seconds())
	}
	if err != nil {
		return trace.Source{}, 0, tune.Serve{}, err
	}
	res.warn(e.stderr)
	c.fromTune(e, res.tune)
	switch {
	case res.pair == nil && c.PD:
		return trace.Source{}, 0, tune.Serve{}, invalidf("--pd: --target %s of %s is one pool (no roles:); leave out --pd, or give a pair target", c.Target, c.PrometheusRangeFlags.Config)
	case res.pair == nil && e.given["kv-link"]:
		return trace.Source{}, 0, tune.Serve{}, invalidf("--kv-link goes with --pd (a pair target)")
	}
	if err := replica(res.replica); err != nil {
		return trace.Source{}, 0, tune.Serve{}, err
	}
	if res.pair != nil {
		// A pair's history is tuned as tune --pd tunes a trace.
		c.PD = true
		prog := c.queryLine(e.stderr)
		w, st, err := res.fetchPair(e, "tune", c.MaxGap, func(f float64) { prog.Printf("tune: queries %.0f%%", 100*f) })
		prog.Done()
		if err != nil {
			return trace.Source{}, 0, tune.Serve{}, err
		}
		warnRead(e.stderr, st)
		// Each pool's parts as one pool's (tune.PartsCovered): the
		// prefill pool's are the pair's arrivals, the decode pool's its
		// decode requests.
		dec := w.Workload
		dec.Coverage, dec.Replicas = w.DecodeCoverage, w.DecodeReplicas
		for _, p := range []struct {
			role string
			w    backtest.Workload
		}{{"prefill", w.Workload}, {"decode", dec}} {
			if err := tune.PartsCovered(p.w, c.Holdout); err != nil {
				return trace.Source{}, 0, tune.Serve{}, fmt.Errorf("tune: %s, the %s pool: %w; choose --start and --end around the gaps (backtest prints them)", historyName(w.Workload), p.role, err)
			}
		}
		name := historyName(w.Workload)
		if res.pair.name != "" {
			name += " (P/D pair " + res.pair.name + ")"
		} else {
			name += " (P/D pair)"
		}
		return w.Source(name, c.Seed), 0, tune.Serve{}, nil
	}
	prog := c.queryLine(e.stderr)
	h, st, err := backtest.Fetch(e.ctx, res.api, res.target, res.grid, func(done, total int) {
		prog.Printf("tune: queries %d/%d", done, total)
	})
	prog.Done()
	if err != nil {
		return trace.Source{}, 0, tune.Serve{}, fmt.Errorf("tune: %w", err)
	}
	warnRead(e.stderr, st) // also before a reconstruction that fails: it may say why
	w, err := backtest.Reconstruct(h, backtest.Options{GapThreshold: c.MaxGap})
	if err != nil {
		return trace.Source{}, 0, tune.Serve{}, res.reconstructError(e.ctx, "tune", err, st.Queried)
	}
	// The rule tune --shard and serve apply (one place: tune.PartsCovered):
	// a part mostly gaps would judge the candidates on flat traffic the
	// reconstruction made up. Before, tune said "holds" on a day 62% gaps,
	// screening windows inside the gap.
	if err := tune.PartsCovered(w, c.Holdout); err != nil {
		return trace.Source{}, 0, tune.Serve{}, fmt.Errorf("tune: %s: %w; choose --start and --end around the gaps (backtest prints them)", historyName(w), err)
	}
	return w.Source(historyName(w), c.Seed), 0, res.serve, nil
}

// warnRead prints on stderr what the history read warned of, as backtest's
// report does (Prometheus's annotations, a --replicas-query with no
// samples, two models under one selector): tune judges candidates on that
// history too.
func warnRead(stderr io.Writer, st backtest.FetchStats) {
	for _, w := range st.Warnings {
		fmt.Fprintf(stderr, "infscale: warning: %s\n", w)
	}
}

// fromTune takes the --config target's tune: block's slo_ttft and
// max_miss where --slo-ttft and --max-miss are not given, so that the
// target is tuned on the terms tune --shard and serve tune it on, and says
// so on stderr. Before, the flags' defaults (2s, 0.1%) ran beside a block
// that said otherwise, and the printed guards (ttft:2) were not the
// block's.
func (c *TuneCmd) fromTune(e *env, t *config.Tune) {
	if t == nil {
		return
	}
	var took []string
	if !e.given["slo-ttft"] {
		c.SLOTTFT = time.Duration(t.SLOTTFT)
		took = append(took, "slo_ttft "+t.SLOTTFT.String())
	}
	if !e.given["max-miss"] {
		c.MaxMiss = percent(100 * t.Budget())
		took = append(took, "max_miss "+strconv.FormatFloat(t.Budget(), 'g', -1, 64))
	}
	if len(took) > 0 {
		fmt.Fprintf(e.stderr, "tune: target %s: %s from its tune: block (--slo-ttft and --max-miss override)\n", c.Target, strings.Join(took, ", "))
	}
}

// queryLine is the line the history's queries redraw on a terminal w;
// with --quiet none (no progress at all, as the replays' too).
func (c *TuneCmd) queryLine(w io.Writer) *status.Line {
	l := status.New(w)
	if c.Quiet {
		l.SetActive(false)
	}
	return l
}

// historyName names a history tune replays, as its report's first line
// prints it: the range the data covers (w.Grid, which Reconstruct shrinks
// to the data when it starts after --start or ends before --end), so the
// split's seconds count from the first time printed and end at the last;
// when that is not the range asked, the asked range follows (as backtest's
// "range asked" line).
func historyName(w backtest.Workload) string {
	name := "history " + w.Grid.Start.Format(time.RFC3339) + " .. " + w.Grid.End().Format(time.RFC3339)
	if r := w.Coverage.Requested; r != nil {
		name += " (the data within the asked " + r.From.Format(time.RFC3339) + " .. " + r.To.Format(time.RFC3339) + ")"
	}
	return name
}

// serveReplica is the serve config's replica: value for the tuned
// replica (the demand signal divides by its capacity): gpu, model, tp and
// calibration as given (or from --config's target). When the replay's
// replica also had flags serve's replica: has no key for and its capacity
// differs from what those four give, the note says so; when neither
// --gpu nor --model chose it, the note marks it to fill in.
func (c *TuneCmd) serveReplica(model *replica.Replica) (value, note string) {
	value = "{gpu: " + tune.YAMLScalar(c.gpu()) + ", model: " + tune.YAMLScalar(c.model())
	sc := replica.DefaultConfig()
	sc.GPU, sc.Model = model.Config().GPU, model.Config().Model
	if c.TP != nil {
		value += ", tp: " + strconv.Itoa(*c.TP)
		sc.TP = *c.TP
	}
	var err error
	if c.Calibration != "" {
		cal, err := replica.LoadCalibration(c.Calibration)
		if err == nil {
			sc, err = cal.Apply(sc)
		}
		if err != nil {
			// Fitted on another base (--calibrated, --fitted, --dtype,
			// ...): serve's replica: takes the reference base, and
			// Calibration.Apply refuses a file it does not reproduce, so
			// printed, serve would not start.
			return value + "}", fmt.Sprintf("not the tuned replica: --calibration %s was fitted on another base than the reference one serve's replica: takes, which refuses it, so it is left out; fit one without --calibrated, --fitted, --dtype, ... for serve (docs/load.md)", c.Calibration)
		}
		value += ", calibration: " + tune.YAMLScalar(c.Calibration)
	}
	value += "}"
	var sm *replica.Replica
	if err == nil {
		sm, err = replica.New(sc)
	}
	switch {
	case err != nil || *recommend.CapacityFrom(sm) != *recommend.CapacityFrom(model):
		note = "not the tuned replica: its other flags (--max-num-seqs, --mfu, ...) change the capacity and serve's replica: has no key for them, so serve sizes demand on this catalog replica"
	case c.GPU == "" && c.Model == "":
		note = "fill in: your GPU and model (tuned on the defaults; infscale gpu --list)"
	}
	return value, note
}

// stressInvalid is the invalid-input error of a stressed copy too short
// to replay (a *tune.StressError in err): when --stress was not given,
// it names the default the copy came from, which the user never typed.
func stressInvalid(given map[string]bool, err error) error {
	if !given["stress"] {
		return invalidf("--stress (not given: the default, %s): %v", defaultStressSpec, err)
	}
	return invalidf("--stress: %v", err)
}

// defaultStressSpec is tune.DefaultStress as --stress writes it
// (rate:1.5,rate:2,bursts:2,gaps:2), for the help and the errors.
var defaultStressSpec = stressSpec(tune.DefaultStress)

// stressSpec writes stressed copies as --stress takes them (parseStress
// reads it back).
func stressSpec(ss []tune.Stress) string {
	specs := make([]string, len(ss))
	for i, s := range ss {
		switch {
		case s.Bursts > 0:
			specs[i] = "bursts:" + strconv.FormatFloat(s.Bursts, 'g', -1, 64)
		case s.Gaps > 0:
			specs[i] = "gaps:" + strconv.FormatFloat(s.Gaps, 'g', -1, 64)
		default:
			specs[i] = "rate:" + strconv.FormatFloat(s.Rate, 'g', -1, 64)
		}
	}
	return strings.Join(specs, ",")
}

// parseStress reads --stress: rate:K, bursts:K and gaps:K (K > 1, at most 100),
// or none alone; nothing given is tune.DefaultStress (nil).
func parseStress(specs []string, given bool) ([]tune.Stress, error) {
	if len(specs) == 0 {
		if given {
			return nil, invalidf("--stress \"\": want rate:K, bursts:K, gaps:K or none (leave the flag out for the default %s)", defaultStressSpec)
		}
		return nil, nil
	}
	out := []tune.Stress{}
	seen := map[string]bool{}
	for i, spec := range specs {
		if seen[spec] {
			return nil, invalidf("--stress %s is given twice (each copy is replayed once)", spec)
		}
		seen[spec] = true
		if spec == "none" {
			if len(specs) > 1 {
				return nil, invalidf("--stress none: give it alone (no stressed copies), not with %q", specs[1-min(i, 1)])
			}
			return out, nil
		}
		kind, v, ok := strings.Cut(spec, ":")
		k, err := quantity.Decimal(v)
		if !ok || err != nil || (kind != "rate" && kind != "bursts" && kind != "gaps") {
			return nil, invalidf("--stress %q: want rate:K, bursts:K, gaps:K or none (e.g. rate:2: the history at twice its rate)", spec)
		}
		if !(k > 1 && k <= 100) {
			return nil, invalidf("--stress %q: K must be > 1 and at most 100 (1 is the history itself)", spec)
		}
		name := strconv.FormatFloat(k, 'g', -1, 64)
		switch kind {
		case "rate":
			out = append(out, tune.Stress{Name: "x" + name, Rate: k})
		case "bursts":
			out = append(out, tune.Stress{Name: "bursts x" + name, Rate: 1, Bursts: k})
		default:
			out = append(out, tune.Stress{Name: "gaps x" + name, Rate: 1, Gaps: k})
		}
	}
	return out, nil
}

// runPD is tune --pd: the pair's targets searched on src (tune.RunPD; its
// requests when counted, 0 unknown), the screened rows drawn to --plot in
// format.
func (c *TuneCmd) runPD(e *env, src trace.Source, requests int64, stress []tune.Stress, model *replica.Replica, format string) error {
	link, err := kvLink(c.KVLink, model)
	if err != nil {
		return err
	}
	prog := newTuneProgress(e.stderr, "tune: replays", c.Quiet)
	var shed []string         // said after the progress line, as simulate says them
	var notes strings.Builder // the memory budget's, said there too
	rep, err := tune.RunPD(e.ctx, src, tune.Config{
		Requests:   requests,
		Replay:     replay.Config{Model: model, SLOTTFT: c.SLOTTFT.Seconds(), Period: c.Period.Seconds(), Size: replaySizer(&notes)},
		MaxMissPct: (*float64)(&c.MaxMiss), Holdout: c.Holdout, Finalists: c.Finalists, Workers: c.Workers, Seed: c.Seed, Stress: stress,
		Baselines: tune.PDBaselines,
		Progress:  prog.replays,
		Warn:      func(msg string) { shed = append(shed, msg) },
	}, replay.PDConfig{KVLinkBytesPerSecond: link})
	prog.end(err)
	fmt.Fprint(e.stderr, notes.String())
	for _, msg := range shed {
		fmt.Fprintf(e.stderr, "warning: %s\n", msg)
	}
	if err != nil {
		if se := (*tune.StressError)(nil); errors.As(err, &se) {
			return stressInvalid(e.given, err)
		}
		if errors.Is(err, replay.ErrPDSLO) {
			return invalidf("--slo-ttft %v with --kv-link %s: %v", c.SLOTTFT, c.KVLink, err)
		}
		return tuneRunError(err, c.Trace)
	}
	if c.Plot != "" {
		if err := writeRendered(c.Plot, func(w io.Writer) error { return rep.Plot(w, format) }); err != nil {
			return fmt.Errorf("--plot %s: %w", c.Plot, err)
		}
		fmt.Fprintf(e.stderr, "plot: wrote %s\n", c.Plot) // as simulate and backtest say it
	}
	if c.Output == "json" {
		return rep.WriteJSON(e.stdout)
	}
	return rep.WriteText(e.stdout, src.Name)
}

// maxWorkers bounds --workers: each replay running at once holds its own
// state, so replays beyond the cores hold more memory and finish no sooner
// (--workers 2000000000 asked for 32 GB before the first replay).
const maxWorkers = 1024

// checkWorkers is --workers' rule, tune's and tune --shard's: 0 (the number
// of cores) to maxWorkers.
func checkWorkers(n int) error {
	if n < 0 || n > maxWorkers {
		return invalidf("--workers %d: want 0 to %d replays at once (0: the number of cores; more than the cores only hold more memory)", n, maxWorkers)
	}
	return nil
}
