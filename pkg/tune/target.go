package tune

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	prommodel "github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/atomicfile"
	"github.com/infscale/infscale/internal/boundedfile"
	"github.com/infscale/infscale/internal/jsonpos"
	"github.com/infscale/infscale/pkg/backtest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/replica"
)

// TargetResult is one serve target's self-tuning outcome: what serve
// keeps for a target with a tune: block, and what `infscale tune --config
// FILE --shard I/N` writes, one JSON file per target (ResultPath).
type TargetResult struct {
	// Target is the target's name; At the end of the history it was
	// tuned on, as its data covers it (before the time asked when the
	// data ends earlier); History that span in seconds.
	Target  string    `json:"target"`
	At      time.Time `json:"at"`
	History float64   `json:"history_s"`
	// SLOTTFT (seconds) and Period (seconds, serve's interval) are the
	// replay's, with Outcome.MaxMissPct the budget: what "holds" was
	// judged on. Matches compares them with a target's config (0: not
	// recorded, as by an infscale before they were).
	SLOTTFT float64 `json:"slo_ttft_s,omitempty"`
	Period  float64 `json:"period_s,omitempty"`
	// Replica is the target's replica: block the replay ran on (nil: not
	// recorded).
	Replica *ReplicaRef `json:"replica,omitempty"`
	// Policy is the winner as a `simulate --policy` string, Candidate the
	// same as values; Outcome whether it holds, and its figures (the tune
	// run's Report.Outcome).
	Policy    string    `json:"policy"`
	Candidate Candidate `json:"candidate"`
	Outcome
	// Replays counts the replays; CPUSeconds the process CPU time the run
	// took (user + system, of the whole process while it ran).
	Replays    int     `json:"replays"`
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
}

// ReplicaRef is a serve target's replica: block as a result records it:
// the GPU, the model (or its config.json), the tensor-parallel degree (1
// when left out) and the calibration file, as written in the config, with
// the digests of the model_config's model and the calibration's fitted
// figures (replica.Model.Digest, replica.Calibration.Digest) the replays
// ran on: a file refitted or edited at the same path is another replica.
type ReplicaRef struct {
	GPU               string `json:"gpu"`
	Model             string `json:"model,omitempty"`
	ModelConfig       string `json:"model_config,omitempty"`
	ModelConfigDigest string `json:"model_config_digest,omitempty"`
	TP                int    `json:"tp"`
	Calibration       string `json:"calibration,omitempty"`
	CalibrationDigest string `json:"calibration_digest,omitempty"`
}

// replicaRef is r as a result records it, with the digests of the files
// as config.Load read them (nil for nil).
func replicaRef(r *config.Replica) *ReplicaRef {
	if r == nil {
		return nil
	}
	return &ReplicaRef{GPU: r.GPU, Model: r.Model, ModelConfig: r.ModelConfig, ModelConfigDigest: r.ModelConfigDigest(),
		TP: max(r.TP, 1), Calibration: r.Calibration, CalibrationDigest: r.CalibrationDigest()}
}

// same reports whether r and o name the same replica: a digest either
// does not record (a result written before digests) is not compared.
func (r ReplicaRef) same(o ReplicaRef) bool {
	if r.ModelConfigDigest == "" || o.ModelConfigDigest == "" {
		r.ModelConfigDigest, o.ModelConfigDigest = "", ""
	}
	if r.CalibrationDigest == "" || o.CalibrationDigest == "" {
		r.CalibrationDigest, o.CalibrationDigest = "", ""
	}
	return r == o
}

// TargetOptions set how TuneTarget reads and replays a target's history.
type TargetOptions struct {
	// Period is the decision period replayed (serve's interval) [15 s].
	Period time.Duration
	// Step is the history's reconstruction step [30 s, longer when the
	// history would exceed backtest.MaxSteps].
	Step time.Duration
	// Workers is the replays run at once [1: one core, beside serve's
	// decisions].
	Workers int
	// Size, when set, is Config.Replay.Size: it sizes the replays to the
	// process's memory (fewer at once than Workers, or a lowered backlog
	// bound) [none: Workers at once, each at replay.MaxBacklog].
	Size func(n, pools int, search bool, requests func() int64) replay.Sizing
	// Seed draws the arrivals within a step and the burst copies [1].
	Seed uint64
	// Space is the search space [DefaultSpace].
	Space Space
	// Progress, when set, is Config.Progress: called after each replay
	// with the work done and expected, in seconds of trace.
	Progress func(done, total int)
	// Warn, when set, is Config.Warn: a policy's requests shed at the
	// replay's backlog bound, once per policy; and what the history read
	// warned of (backtest.FetchStats.Warnings: Prometheus's annotations,
	// a replicas: query with no samples, two models under one selector),
	// each once, before the replays.
	Warn func(msg string)
}

// replicaOf is the replica model of a serve target's replica: block (GPU,
// model or model_config, tensor-parallel degree and calibration file), as
// pkg/config sizes the demand metric on, with the replica as a result
// records it, the digests of the files as read here (nil for nil).
// Errors: an unknown GPU or model, an unreadable calibration, a replica
// that does not fit, and a file whose contents are not those config.Load
// read (a digest r records): a result tuned on them would not match the
// configuration it is for (TargetResult.Matches), and serve would refuse
// it and tune again.
func replicaOf(r *config.Replica) (*replica.Replica, *ReplicaRef, error) {
	c := replica.DefaultConfig()
	if r == nil {
		m, err := replica.New(c)
		return m, nil, err
	}
	ref := replicaRef(r)
	ref.ModelConfigDigest, ref.CalibrationDigest = "", ""
	var err error
	if c.GPU, err = replica.LookupGPU(r.GPU); err != nil {
		return nil, nil, err
	}
	// model_config (a Hugging Face config.json) replaces model, as
	// pkg/config reads it.
	if r.ModelConfig != "" {
		c.Model, err = replica.LoadHFConfig(r.ModelConfig)
		if err != nil && r.ModelConfigDigest() != "" { // read at the load: gone or garbled since
			err = goneSince("model_config", r.ModelConfig, err)
		}
		if err == nil {
			ref.ModelConfigDigest = c.Model.Digest()
			err = changed("model_config", r.ModelConfig, r.ModelConfigDigest(), ref.ModelConfigDigest)
		}
	} else {
		c.Model, err = replica.LookupModel(r.Model)
	}
	if err != nil {
		return nil, nil, err
	}
	if r.TP > 0 {
		c.TP = r.TP
	}
	if r.Calibration != "" {
		cal, err := replica.LoadCalibration(r.Calibration)
		if err != nil && r.CalibrationDigest() != "" { // read at the load: gone or garbled since
			err = goneSince("calibration", r.Calibration, err)
		}
		if err != nil {
			return nil, nil, err
		}
		ref.CalibrationDigest = cal.Digest()
		if err := changed("calibration", r.Calibration, r.CalibrationDigest(), ref.CalibrationDigest); err != nil {
			return nil, nil, err
		}
		if c, err = cal.Apply(c); err != nil {
			return nil, nil, err
		}
	}
	m, err := replica.New(c)
	return m, ref, err
}

// atZero reports whether a replicas series read 0 wherever it has a
// point, and has one.
func atZero(replicas []float64) bool {
	seen := false
	for _, v := range replicas {
		switch {
		case math.IsNaN(v):
		case v != 0:
			return false
		default:
			seen = true
		}
	}
	return seen
}

// goneSince is replicaOf's error when file (the replica: block's key),
// which config.Load read, cannot be read now (err).
func goneSince(key, file string, err error) error {
	return fmt.Errorf("%s %s cannot be read since the configuration was loaded: %w; put the file back, or reload serve (SIGHUP) to take the change", key, file, err)
}

// changed is replicaOf's error when file (the replica: block's key) now
// has digest now where config.Load read loaded ("": not recorded, as in
// a Replica not from Load; nil).
func changed(key, file, loaded, now string) error {
	if loaded == "" || loaded == now {
		return nil
	}
	return fmt.Errorf("%s %s changed since the configuration was loaded (digest %s, loaded %s): a result tuned on it would not be for the configuration in use; reload serve (SIGHUP) to take it, or put the file back",
		key, file, now[:min(8, len(now))], loaded[:min(8, len(loaded))])
}

// ErrShortHistory is TuneTarget's error when the target's data covers
// less than config.MinTuneHistory.
var ErrShortHistory = errors.New("too little history to tune on")

// TuneTarget tunes serve target t (which has a tune: block with its
// defaults, as config.Load leaves it) on its own Prometheus history:
// the span tune.history ending at now, read and rebuilt as `backtest`
// does, replayed on the target's replica, with the budget tune.max_miss.
// Errors: the history's (*promql.QueryError, backtest.ErrNoTraffic,
// ErrShortHistory when the data covers less than config.MinTuneHistory,
// ErrHistoryGaps when gaps cover more than half of a part of its split),
// the replica's, and ctx's.
func TuneTarget(ctx context.Context, api promql.API, t *config.Target, now time.Time, o TargetOptions) (TargetResult, error) {
	if t.Tune == nil {
		return TargetResult{}, fmt.Errorf("target %s: no tune: block", t.Name)
	}
	if o.Period <= 0 {
		o.Period = 15 * time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 1
	}
	hist := time.Duration(t.Tune.History)
	if o.Step <= 0 {
		o.Step = max(30*time.Second, (hist/backtest.MaxSteps).Truncate(time.Second)+time.Second)
	}
	model, ref, err := replicaOf(t.Replica)
	if err != nil {
		return TargetResult{}, fmt.Errorf("target %s: replica: %w", t.Name, err)
	}
	space := o.Space
	if len(space.Metrics) == 0 {
		space = DefaultSpace
	}
	cooldown, zero := t.ScalesToZero()
	if zero { // replayed as the target runs: at zero when idle
		space = space.scaleToZero(cooldown)
	}
	if t.Max != nil { // replayed under the target's max, as it decides
		space = space.capped(*t.Max)
	}
	sel, err := promql.ParseSelector(t.Selector)
	if err != nil {
		return TargetResult{}, fmt.Errorf("target %s: selector: %w", t.Name, err)
	}
	g, err := backtest.NewGrid(now.Add(-hist).Truncate(o.Step), now, o.Step)
	if err != nil {
		return TargetResult{}, fmt.Errorf("target %s: %w", t.Name, err)
	}
	h, st, err := backtest.Fetch(ctx, api, backtest.Target{Server: t.Server, Selector: sel, Replicas: t.Replicas}, g, nil)
	if err != nil {
		return TargetResult{}, fmt.Errorf("target %s: history: %w", t.Name, err)
	}
	if o.Warn != nil {
		for _, msg := range st.Warnings {
			o.Warn(msg)
		}
	}
	w, err := backtest.Reconstruct(h, backtest.Options{})
	if errors.Is(err, backtest.ErrNoTraffic) && zero && atZero(h.Replicas) {
		// Idle at zero, not misread: nothing to tune on yet, as a new
		// target (tune --shard skips it; serve tries again).
		return TargetResult{}, fmt.Errorf("target %s: history: %w: no request over %s..%s, the target at zero throughout (its replicas: query reads 0); it is tuned once its series span %s",
			t.Name, ErrShortHistory, g.Start.Format(time.RFC3339), g.End().Format(time.RFC3339), prommodel.Duration(config.MinTuneHistory))
	}
	if errors.Is(err, backtest.ErrNoTraffic) {
		// Where it looked and what chose it, as backtest says it: a
		// selector matching nothing is the usual cause.
		check := "check the target's selector: and server:"
		if why := backtest.DiagnoseNoTraffic(ctx, api, backtest.Target{Server: t.Server, Selector: sel}, g); why != "" {
			check = why + "; " + check
		}
		return TargetResult{}, fmt.Errorf("target %s: history: %w: %s%s over %s..%s (%s)", t.Name, err,
			t.Server.Families().Requests[0], t.Selector, g.Start.Format(time.RFC3339), g.End().Format(time.RFC3339), check)
	}
	if errors.Is(err, backtest.ErrTooManyRequests) {
		// Its range is the tune: block's history, not a flag.
		return TargetResult{}, fmt.Errorf("target %s: history: %w over %s..%s; lower tune.history (%s)", t.Name, err,
			g.Start.Format(time.RFC3339), g.End().Format(time.RFC3339), t.Tune.History)
	}
	if err != nil {
		return TargetResult{}, fmt.Errorf("target %s: history: %w", t.Name, err)
	}
	// The data may cover much less than the history asked (a new target,
	// a Prometheus keeping less): under config.MinTuneHistory, too few
	// cold starts to choose on, and the stressed copies' checks would
	// name flags a tune: block has no keys for.
	if covered := w.Grid.End().Sub(w.Grid.Start); covered < config.MinTuneHistory {
		why := "a new target is tuned once its series span that"
		if late := now.Sub(w.Grid.End()); late > 2*o.Step {
			why = fmt.Sprintf("its data ends %s before now: are its series still scraped?", late.Round(time.Second))
		}
		return TargetResult{}, fmt.Errorf("target %s: history: %w: the data covers %s (%s..%s) of the %s asked; at least %s is needed (%s)",
			t.Name, ErrShortHistory, covered.Round(time.Second), w.Grid.Start.Format(time.RFC3339), w.Grid.End().Format(time.RFC3339), t.Tune.History, prommodel.Duration(config.MinTuneHistory), why)
	}
	if err := PartsCovered(w, DefaultHoldout); err != nil {
		return TargetResult{}, fmt.Errorf("target %s: history: %w; tuned again once the gaps leave that part", t.Name, err)
	}
	cpu0 := cpuSeconds()
	budget := 100 * t.Tune.Budget() // 0 is a budget of no miss, not the default
	rep, err := Run(ctx, w.Source("target "+t.Name, max(o.Seed, 1)), Config{
		Replay:     replay.Config{Model: model, SLOTTFT: time.Duration(t.Tune.SLOTTFT).Seconds(), Period: o.Period.Seconds(), Size: o.Size},
		MaxMissPct: &budget, Workers: o.Workers, Seed: o.Seed, Space: space, Progress: o.Progress, Warn: o.Warn,
	})
	if err != nil {
		return TargetResult{}, fmt.Errorf("target %s: %w", t.Name, err)
	}
	return TargetResult{
		// The history as the data covers it (Reconstruct shrinks the grid
		// to the data when it ends before now), not the range asked.
		Target: t.Name, At: w.Grid.End(), History: w.Grid.End().Sub(w.Grid.Start).Seconds(),
		SLOTTFT: time.Duration(t.Tune.SLOTTFT).Seconds(), Period: o.Period.Seconds(), Replica: ref, Policy: rep.Policy, Candidate: rep.Winner(),
		Outcome: rep.Outcome, Replays: rep.Replays, CPUSeconds: cpuSeconds() - cpu0,
	}, nil
}

// ErrHistoryGaps is TuneTarget's error when more than half of the tuning
// part or of the held-out part of the history lies in gaps (no sample of
// the success counter: Prometheus or its scrapes down).
var ErrHistoryGaps = errors.New("too much of the history is gaps")

// PartsCovered checks that each part of w's split (the tuning part, the
// held-out last holdout of its span, as Run splits it) has samples over at
// least half its span; ErrHistoryGaps names the part and its time in gaps.
// Within a gap the arrivals are the counters' increase spread evenly
// (backtest's reconstruction): a held-out part that is mostly gap judged
// the candidate out of sample on flat traffic it made up, and "holds"
// then said little. A step the replicas query reads as 0 at both ends is
// not counted: a scale-to-zero target at zero has no pod to export the
// counter, and nothing was served there (a target that sleeps most nights
// was refused every run).
func PartsCovered(w backtest.Workload, holdout float64) error {
	start, end := w.Grid.Start, w.Grid.End()
	span := float64(w.Grid.N) * w.Grid.Step.Seconds()
	split := start.Add(time.Duration(splitAt(span, holdout)) * time.Second) // as Run splits it
	for _, p := range []struct {
		name     string
		from, to time.Time
	}{{"tuning part", start, split}, {"held-out part", split, end}} {
		var in time.Duration
		for _, g := range w.Coverage.Gaps {
			// Step by step: those at zero replicas are left out.
			for a, b := maxTime(g.From, p.from), minTime(g.To, p.to); b.After(a); {
				j := int(a.Sub(start) / w.Grid.Step) // the step from point j to j+1 (start <= a < end)
				e := minTime(w.Grid.At(j+1), b)
				if !(len(w.Replicas) > j+1 && w.Replicas[j] == 0 && w.Replicas[j+1] == 0) {
					in += e.Sub(a)
				}
				a = e
			}
		}
		if part := p.to.Sub(p.from); part > 0 && 2*in > part {
			return fmt.Errorf("%w: the %s (%s..%s) has no sample for %s of its %s, more than half (the arrivals there would be the counters' increase spread evenly, and the candidate judged on them); was Prometheus or its scraping down? (spans the target's replicas: query reads as 0 are not counted)",
				ErrHistoryGaps, p.name, p.from.UTC().Format(time.RFC3339), p.to.UTC().Format(time.RFC3339), in.Round(time.Second), part.Round(time.Second))
		}
	}
	return nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Covered is the history r was tuned on, as its data covered it, and
// whether that is less than asked by more than an hour (Prometheus keeps
// less than tune.history, or the target is newer), written as tune.history
// is (e.g. "15d").
func (r *TargetResult) Covered(asked time.Duration) (covered string, short bool) {
	d := time.Duration(r.History * float64(time.Second)).Round(time.Minute)
	return prommodel.Duration(d).String(), d < asked-time.Hour
}

// MaxLivePoints bounds the points of each range query LiveMisses sends
// (its step is a whole number of the step given, at least that).
const MaxLivePoints = 1440

// LiveReading is LiveMisses' reading of a target's TTFT histogram.
type LiveReading struct {
	// Late is the fraction of Requests (the histogram's count) whose
	// first token came later than slo_ttft, as the buckets prove it.
	Late, Requests float64
	// Lo and Hi, seconds, are the bucket (Lo, Hi] of the histogram as
	// scraped that holds slo_ttft strictly inside it (Hi +Inf above its
	// last finite bound): its requests are not counted late, though some
	// may be. Both 0 when slo_ttft is a bucket bound: the count is exact.
	Lo, Hi float64
}

// LiveMisses is the share of t's requests whose first token came later
// than its tune: block's slo_ttft over [from, now], read from the
// server's own TTFT histogram in Prometheus, with how many requests that
// histogram counted and the bucket slo_ttft falls inside (LiveReading). Only the buckets wholly above slo_ttft are counted
// (FractionAboveEdge): a bucket that straddles it holds requests on both
// sides in unknown shares, and a linear split counted a third of vLLM's
// (1, 2.5] late at 2 s where replays put 0 to 26% of it there, reverting
// policies that held; an slo_ttft at a bucket bound is counted exactly
// (config warns of one that is not, on vLLM in adopt mode; serve, on
// any server, from the buckets it reads here). step is the
// grid's (serve's interval), made coarser over a span of more than
// MaxLivePoints steps. Errors: the queries'; a server without a TTFT
// histogram (ok false).
func LiveMisses(ctx context.Context, api promql.API, t *config.Target, from, now time.Time, step time.Duration) (r LiveReading, ok bool, err error) {
	sel, err := promql.ParseSelector(t.Selector)
	if err != nil {
		return r, false, err
	}
	if step <= 0 {
		step = 15 * time.Second
	}
	start := from.Truncate(step)
	// The misses are the TTFT histogram's increase over the whole span
	// (one instant query); the range queries beside it need no finer
	// grid than MaxLivePoints points, however long the candidate has
	// been adopted (a month at a 15 s step is 172,800 points of each
	// series, every 5 minutes for each adopted target).
	if n := now.Sub(start) / step; n > MaxLivePoints {
		step *= (n + MaxLivePoints - 1) / MaxLivePoints
	}
	g, err := backtest.NewGrid(start, now, step)
	if err != nil {
		return r, false, err
	}
	// No replicas query: the misses need only the TTFT histogram, and one
	// split over the span (kube-state-metrics restarted under another
	// label: two series) would fail the read and so block the revert.
	h, _, err := backtest.Fetch(ctx, api, backtest.Target{Server: t.Server, Selector: sel}, g, nil)
	if err != nil {
		return r, false, err
	}
	if h.TTFT == nil || h.TTFT.Count() == 0 {
		return r, false, nil
	}
	slo := time.Duration(t.Tune.SLOTTFT).Seconds()
	r = LiveReading{Late: h.TTFT.FractionAboveEdge(slo), Requests: h.TTFT.Count()}
	r.Lo, r.Hi, _ = h.TTFT.Straddled(slo)
	return r, true, nil
}

// Adapt is the live policy with c's tuned parts in place: c's metrics
// (with its guards) and each of its options (min, lookahead, the
// scale-down hold, ...); everything else (max, the replica's capacity,
// scale-up behaviour, schedule, zero, guard) stays the live policy's.
// Errors: an option live cannot take, or the result's validation.
func (c Candidate) Adapt(live recommend.Policy) (recommend.Policy, error) {
	p := live
	p.Behavior = *live.Behavior.DeepCopy()
	p.Schedule = slices.Clone(live.Schedule)
	own, err := c.Recommend()
	if err != nil {
		return recommend.Policy{}, err
	}
	p.Metrics = own.Metrics
	for _, o := range c.Options {
		if err := replay.SetOption(&p, o.Name, o.text()); err != nil {
			return recommend.Policy{}, fmt.Errorf("option %s=%s: %w", o.Name, o.text(), err)
		}
	}
	// max is the target's: a result tuned under another max is refused
	// before (Matches); one from before the max was recorded has none.
	p.Max = live.Max
	if live.Zero != nil && p.Zero != nil {
		// cooldown= is the live one to the millisecond, capped at a year
		// (replayedCooldown; Matches checks it): the target's stays.
		z := *live.Zero
		p.Zero = &z
	}
	if p.Min > p.Max {
		p.Min = p.Max
	}
	if err := p.Validate(); err != nil {
		return recommend.Policy{}, fmt.Errorf("%s: %w", c.Policy(), err)
	}
	return p, nil
}

// ResultPath is where target name's result lives in dir: dir/NAME.json.
func ResultPath(dir, name string) string { return filepath.Join(dir, name+".json") }

// WriteResult writes r to ResultPath(dir, r.Target) atomically and
// durably (atomicfile.WriteDurable: synced before the rename, and the
// directory after it), so a reader never sees half a file and a node that
// crashes right after leaves the old file or the new one, never an empty
// one that serve would refuse. Once a tuning run per target.
func WriteResult(dir string, r TargetResult) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeResultFile(ResultPath(dir, r.Target), append(b, '\n'))
}

// writeResultFile is WriteResult's write, a variable for the test that it
// is the durable one.
var writeResultFile = atomicfile.WriteDurable

// ReadResult reads target name's result from dir; ok is false when there
// is none yet (dir holds no NAME.json). Errors: dir missing or not a
// directory (a misspelt tune.dir or an unmounted volume would otherwise
// read as "no result yet" forever), an unreadable file, one that is not a
// regular file or is larger than MaxResultSize, or one that is not a
// result (naming the file): another target's, a policy string that is not
// its candidate's, or one that says it holds while a figure of its own is
// over its budget.
func ReadResult(dir, name string) (r TargetResult, ok bool, err error) {
	path := ResultPath(dir, name)
	// Bounded and never blocking: a named pipe or a huge file in the
	// results directory would otherwise hold serve's tuning (every
	// target's, and the live-miss checks) for good.
	b, err := boundedfile.Read(path, MaxResultSize, "a tune result", "want the NAME.json infscale tune --shard writes")
	if errors.Is(err, os.ErrNotExist) {
		fi, derr := os.Stat(dir)
		what := ""
		switch {
		case errors.Is(derr, os.ErrNotExist):
			what = "does not exist"
		case derr != nil:
			what = derr.Error()
		case !fi.IsDir():
			what = "is not a directory"
		}
		if what != "" {
			return TargetResult{}, false, fmt.Errorf("tune.dir %s %s: want the directory infscale tune --shard writes NAME.json results to (check the path, and that its volume is mounted)", dir, what)
		}
		return TargetResult{}, false, nil
	}
	if err != nil {
		return TargetResult{}, false, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return TargetResult{}, false, resultJSONError(path, b, err)
	}
	if r.Target != name || r.Candidate.Metric == "" {
		return TargetResult{}, false, fmt.Errorf("%s: not a tune result for target %s", path, name)
	}
	// The policy string is what serve exports and logs, the candidate
	// what decides: a file whose two differ was not written by tune.
	if p := r.Candidate.Policy(); p != r.Policy {
		return TargetResult{}, false, fmt.Errorf("%s: not a tune result: its policy %q is not its candidate's %q", path, r.Policy, p)
	}
	// holds is what serve's adopt mode acts on: a file whose own figures
	// contradict it was not judged by tune's rule (Choose).
	if err := r.Outcome.holdsByFigures(); err != nil {
		return TargetResult{}, false, fmt.Errorf("%s: not a tune result: %w", path, err)
	}
	return r, true, nil
}

// resultJSONError is a result file's decoding error with its line and
// column and what to do: a hand edit or a truncated copy said only
// "invalid character 'q' looking for beginning of value".
func resultJSONError(path string, data []byte, err error) error {
	off, err := jsonpos.Locate(data, err)
	const todo = "want the NAME.json infscale tune --shard writes: run it again, or remove the file"
	if off < 0 {
		return fmt.Errorf("%s: %w (%s)", path, err, todo)
	}
	line, col := jsonpos.LineCol(data, off)
	return fmt.Errorf("%s: line %d:%d: %w (%s)", path, line, col, err, todo)
}

// holdsByFigures checks that an outcome that says it holds keeps within
// its budget on each of its figures (in sample, out of sample, every
// stressed copy, one per stress name), as Choose required of it.
func (o *Outcome) holdsByFigures() error {
	if !o.Holds {
		return nil
	}
	if len(o.Stress) != len(o.StressNames) {
		return fmt.Errorf("it has %d stressed figures for %d stress names", len(o.Stress), len(o.StressNames))
	}
	figs := []Figures{o.InSample, o.OutOfSample}
	names := []string{"in_sample", "out_of_sample"}
	for i, f := range o.Stress {
		figs, names = append(figs, f), append(names, "stress "+o.StressNames[i])
	}
	for i, f := range figs {
		if !(f.MissPct <= o.MaxMissPct) {
			return fmt.Errorf("it says it holds, but its %s misses %g%% of requests, over its budget of %g%%", names[i], f.MissPct, o.MaxMissPct)
		}
	}
	return nil
}

// MaxResultSize is the largest result file ReadResult reads (1 MiB; tune
// writes a few KB).
const MaxResultSize = 1 << 20

// Matches reports whether r was tuned for t as configured now, with
// period serve's interval: the budget (tune.max_miss), the TTFT SLO
// (tune.slo_ttft), the period its "holds" was judged on, the replica it
// replayed, and scale to zero (at zero with the target's cooldownPeriod,
// or at a floor while the target keeps one). A figure r does not record
// (0, nil) is not compared. The error names what differs and
// both values.
func (r *TargetResult) Matches(t *config.Target, period time.Duration) error {
	var diff []string
	if b := 100 * t.Tune.Budget(); !near(r.MaxMissPct, b) {
		diff = append(diff, fmt.Sprintf("max_miss %g (the target's is %g)", r.MaxMissPct/100, t.Tune.Budget()))
	}
	if s := time.Duration(t.Tune.SLOTTFT).Seconds(); r.SLOTTFT != 0 && !near(r.SLOTTFT, s) {
		diff = append(diff, fmt.Sprintf("slo_ttft %gs (the target's is %s)", r.SLOTTFT, t.Tune.SLOTTFT))
	}
	if p := period.Seconds(); r.Period != 0 && p > 0 && !near(r.Period, p) {
		diff = append(diff, fmt.Sprintf("a %gs period (pollingInterval is %s)", r.Period, period))
	}
	if have := replicaRef(t.Replica); r.Replica != nil && have != nil && !r.Replica.same(*have) {
		d := fmt.Sprintf("replica %s (the target's is %s", r.Replica, have)
		if o := *r.Replica; o.ModelConfigDigest != "" && have.ModelConfigDigest != "" || o.CalibrationDigest != "" && have.CalibrationDigest != "" {
			if o.ModelConfigDigest, o.CalibrationDigest = have.ModelConfigDigest, have.CalibrationDigest; o == *have {
				d += ": the same files, other contents; serve compares them as it loaded them, so reload serve (SIGHUP) after replacing one"
			}
		}
		diff = append(diff, d+")")
	}
	if m, ok := r.Candidate.Option("max"); ok && t.Max != nil && !near(m, replayedMax(*t.Max)) {
		// Its misses were replayed under that max (Space.capped).
		diff = append(diff, fmt.Sprintf("maxReplicaCount %s (the target's is %d)", strconv.FormatFloat(m, 'f', -1, 64), *t.Max))
	}
	if rc, ok := r.Candidate.Option("cooldown"); !ok {
		// Replayed at a floor (min=, 1 when not written), never at zero.
		if tc, zero := t.ScalesToZero(); zero {
			floor := 1.0
			if m, ok := r.Candidate.Option("min"); ok {
				floor = m
			}
			diff = append(diff, fmt.Sprintf("minReplicaCount %s, not at zero (the target scales to zero: minReplicaCount 0, cooldownPeriod %s)", strconv.FormatFloat(floor, 'f', -1, 64), prommodel.Duration(tc)))
		}
	} else { // replayed at zero with that cooldown
		switch tc, zero := t.ScalesToZero(); {
		case !zero:
			floor := 1 // minReplicaCount's default
			if t.Min != nil {
				floor = *t.Min
			}
			diff = append(diff, fmt.Sprintf("scale to zero, cooldownPeriod %ss (the target keeps minReplicaCount %d)", strconv.FormatFloat(rc, 'f', -1, 64), floor))
		case !near(rc, replayedCooldown(tc)):
			diff = append(diff, fmt.Sprintf("scale to zero, cooldownPeriod %ss (the target's is %s)", strconv.FormatFloat(rc, 'f', -1, 64), prommodel.Duration(tc)))
		}
	}
	if len(diff) == 0 {
		return nil
	}
	return fmt.Errorf("tuned with %s: from another configuration of target %s", strings.Join(diff, ", "), t.Name)
}

// Terms names the terms a result for t is judged on, with period serve's
// interval: what Matches compares (the budget, the TTFT SLO, the period,
// the replica with its files' digests, and scale to zero with its
// cooldown as replayed; not the maxReplicaCount Matches also compares,
// so that the digests of serves before it still name the same terms: a
// revert read back after a reload to another max is kept, the cautious
// side), as the first 16 hex digits of their SHA-256.
// serve exports it beside a candidate's state, so that a revert read back
// after a restart is kept only under the terms it was made under.
func Terms(t *config.Target, period time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "max_miss=%g slo_ttft=%d period=%d", t.Tune.Budget(), time.Duration(t.Tune.SLOTTFT), period)
	if r := replicaRef(t.Replica); r != nil {
		fmt.Fprintf(&b, " replica=%q/%q/%q/%s/%d/%q/%s", r.GPU, r.Model, r.ModelConfig, r.ModelConfigDigest, r.TP, r.Calibration, r.CalibrationDigest)
	}
	if cooldown, zero := t.ScalesToZero(); zero {
		fmt.Fprintf(&b, " cooldown=%g", replayedCooldown(cooldown))
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// String is the replica as a replica: block, {gpu: G, model: M, tp: N[,
// calibration: F]}, a file's digest's first 8 digits after its path
// ("model_config: qwen.json (digest 1a2b3c4d)").
func (r *ReplicaRef) String() string {
	m := "model: " + r.Model
	if r.ModelConfig != "" {
		m = "model_config: " + r.ModelConfig + short(r.ModelConfigDigest)
	}
	s := fmt.Sprintf("{gpu: %s, %s, tp: %d", r.GPU, m, r.TP)
	if r.Calibration != "" {
		s += ", calibration: " + r.Calibration + short(r.CalibrationDigest)
	}
	return s + "}"
}

// short is " (digest D)", D digest's first 8 digits; "" for none.
func short(digest string) string {
	if digest == "" {
		return ""
	}
	return " (digest " + digest[:min(8, len(digest))] + ")"
}

// near compares two figures that went through JSON and a multiplication
// by 100: equal within one part in a billion.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(math.Abs(a), math.Abs(b)) }
