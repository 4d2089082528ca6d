package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/infscale/infscale/internal/atomicfile"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/tune"
)

// parseShard reads --shard I/N (0 <= I < N); an empty I is the Kubernetes
// indexed Job's JOB_COMPLETION_INDEX. Errors name what is wrong: N, I (a
// letter such as the help's "I" is not an index), or the environment
// variable (unset, or not an index below N).
func parseShard(v string) (i, n int, err error) {
	const want = "want I/N with 0 <= I < N, e.g. 0/4, or /N to take I from JOB_COMPLETION_INDEX (an indexed Job sets it)"
	a, b, ok := strings.Cut(v, "/")
	if !ok {
		return 0, 0, invalidf("--shard %q: no /: %s", v, want)
	}
	n, errn := strconv.Atoi(b)
	if errn != nil || n < 1 {
		return 0, 0, invalidf("--shard %q: N (the number of shards, after the /) must be an integer >= 1; %s", v, want)
	}
	if a == "" {
		env, set := os.LookupEnv("JOB_COMPLETION_INDEX")
		if !set {
			return 0, 0, invalidf("--shard %q: /N takes the shard index from JOB_COMPLETION_INDEX, which is not set (a Kubernetes indexed Job sets it); outside such a Job give the index: 0/%d to %d/%d", v, n, n-1, n)
		}
		i, err := strconv.Atoi(env)
		if err != nil || i < 0 || i >= n {
			return 0, 0, invalidf("--shard %q: JOB_COMPLETION_INDEX=%q is not a shard index from 0 to %d (the Job's completions must equal N, %d)", v, env, n-1, n)
		}
		return i, n, nil
	}
	i, erri := strconv.Atoi(a)
	if erri != nil || i < 0 || i >= n {
		return 0, 0, invalidf("--shard %q: I (the shard index, before the /) must be an integer from 0 to %d; %s", v, n-1, want)
	}
	return i, n, nil
}

// sameDir reports whether paths a and b name one directory: equal once
// absolute and cleaned, or the same file (a symbolic link, a mount seen
// twice).
func sameDir(a, b string) bool {
	aa, erra := filepath.Abs(a)
	ab, errb := filepath.Abs(b)
	if erra == nil && errb == nil && aa == ab {
		return true
	}
	fa, erra := os.Stat(a)
	fb, errb := os.Stat(b)
	return erra == nil && errb == nil && os.SameFile(fa, fb)
}

// shardResult is one target's line of `tune --shard`'s JSON output.
type shardResult struct {
	Target string `json:"target"`
	// Path is the result file written; Error why none was, or Skipped
	// when the target's data covers too little history yet (a new
	// target: not a failure).
	Path    string             `json:"path,omitempty"`
	Result  *tune.TargetResult `json:"result,omitempty"`
	Error   string             `json:"error,omitempty"`
	Skipped string             `json:"skipped,omitempty"`
}

// runShard is `tune --config FILE --shard I/N`: the config's targets with
// a tune: block whose index among them is I modulo N are tuned on their
// own history, one after the other, each result written to --out (or the
// target's tune.dir) as NAME.json, where serve's tune: block reads it.
// A target that fails is reported and the others still run; the exit code
// is 1 when any failed. A target whose data covers less than an hour (a
// new one) is reported as skipped, not failed.
func (c *TuneCmd) runShard(e *env) error {
	if c.PrometheusRangeFlags.Config == "" {
		return invalidf("--shard needs --config FILE (the targets to tune are its targets with a tune: block)")
	}
	// Only these flags act on a shard; any other (--max-miss, --stress,
	// --gpu, --pd, ...) would be ignored, so it is refused.
	shardFlags := map[string]bool{"config": true, "shard": true, "out": true, "workers": true, "output": true, "quiet": true, "seed": true, "query-timeout": true}
	for _, name := range slices.Sorted(maps.Keys(e.given)) {
		if !shardFlags[name] {
			return invalidf("--%s does not go with --shard: each target is tuned on its tune.history, ending now, with its own tune: block (max_miss, slo_ttft), replica: and the file's interval as the period (with --shard: --out, --workers, --seed, --query-timeout, --output, --quiet)", name)
		}
	}
	i, n, err := parseShard(c.Shard)
	if err != nil {
		return err
	}
	if err := checkWorkers(c.Workers); err != nil {
		return err
	}
	// Checked as backtest checks it: 0 is no limit (promql.ClientConfig),
	// and a hung Prometheus would hang the shard's Job for good (the
	// chart's activeDeadlineSeconds is none by default).
	if err := durationIn("query-timeout", c.QueryTimeout, minQueryTimeout, maxQueryTimeout, "each Prometheus query's; 0 would disable it and a hung Prometheus would hang the command"); err != nil {
		return err
	}
	// --workers' default is the cores here too (TuneTarget's own default,
	// one core, is serve's, tuning beside its decisions).
	workers := c.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	file, err := loadConfig(c.PrometheusRangeFlags.Config)
	if err != nil {
		return err
	}
	warnConfig(e.stderr, file.Deprecations)
	if file.Prometheus.Embedded() {
		return invalidf("%s: tune --shard needs prometheus.url (history comes from range queries)", c.PrometheusRangeFlags.Config)
	}
	var mine []*config.Target
	k := 0
	for j := range file.Targets {
		t := &file.Targets[j]
		if t.Tune == nil {
			continue
		}
		if k%n == i {
			mine = append(mine, t)
		}
		k++
	}
	if k == 0 {
		return invalidf("%s: no target has a tune: block", c.PrometheusRangeFlags.Config)
	}
	for _, t := range mine {
		if c.Out == "" && t.Tune.Dir == "" {
			return invalidf("target %s: give --out DIR or the target's tune.dir (where serve reads the result)", t.Name)
		}
		// Each result is written after minutes of tuning: a directory that
		// cannot take it is refused first.
		if c.Out != "" {
			if fi, err := os.Stat(c.Out); err != nil || !fi.IsDir() {
				return invalidf("--out %s: not an existing directory (the results are written there as TARGET.json)", c.Out)
			}
			if err := outputDirWritable("out", c.Out, c.Out); err != nil {
				return err
			}
			// Written, but where serve does not read it: said before the
			// minutes of tuning (a preview may mean it; a CronJob not).
			switch {
			case t.Tune.Dir == "":
				fmt.Fprintf(e.stderr, "infscale: warning: target %s has no tune.dir: serve tunes it in process and does not read the result written to --out %s\n", t.Name, c.Out)
			case !sameDir(t.Tune.Dir, c.Out):
				fmt.Fprintf(e.stderr, "infscale: warning: target %s: serve reads its result from tune.dir %s, not from --out %s: it will not see this run's\n", t.Name, t.Tune.Dir, c.Out)
			}
			continue
		}
		if fi, err := os.Stat(t.Tune.Dir); err != nil || !fi.IsDir() {
			return invalidf("target %s: tune.dir %s: not an existing directory (the result is written there as %s.json, where serve reads it)", t.Name, t.Tune.Dir, t.Name)
		}
		if err := atomicfile.CheckDir(t.Tune.Dir); err != nil {
			return fmt.Errorf("target %s: tune.dir %w; choose a directory you can write to (checked before tuning, whose result would be lost at its end)", t.Name, err)
		}
	}
	// Each target's NAME.json too, as every output file is checked before
	// the work: a path that is no regular file (a directory, a named pipe)
	// failed the write after the tuning; a symlink is followed, its file
	// replaced in the file's own directory.
	for _, t := range mine {
		dir := c.Out
		if dir == "" {
			dir = t.Tune.Dir
		}
		path := tune.ResultPath(dir, t.Name)
		if err := atomicfile.CheckTarget(path); err != nil {
			return invalidf("target %s: %w", t.Name, err)
		}
		if r, err := atomicfile.Resolve(path); err == nil && r != path {
			if err := atomicfile.CheckDir(filepath.Dir(r)); err != nil {
				return fmt.Errorf("target %s: %s is a link to %s: directory %w; choose a directory you can write to (checked before tuning, whose result would be lost at its end)", t.Name, path, r, err)
			}
		}
	}
	rt, err := file.Prometheus.RoundTripper()
	if err != nil {
		return invalidf("%s: prometheus http client: %v", c.PrometheusRangeFlags.Config, err)
	}
	api, err := promql.NewClient(promql.ClientConfig{URL: file.Prometheus.URL, RoundTripper: rt, Timeout: c.QueryTimeout, TimeoutName: "--query-timeout", Retries: historyRetries, OnRetry: retryNotice(e.stderr)})
	if err != nil {
		return invalidf("%s: %v", c.PrometheusRangeFlags.Config, err)
	}
	now := time.Now()
	if c.PrometheusRangeFlags.now != nil {
		now = c.PrometheusRangeFlags.now()
	}
	out := []shardResult{} // [] in JSON for a shard with no target, not null
	failed := 0
	if len(mine) == 0 && c.Output != "json" {
		fmt.Fprintf(e.stdout, "shard %d/%d: no target: %s has %d target(s) with a tune: block, the k-th (from 0) in shard k mod %d\n", i, n, c.PrometheusRangeFlags.Config, k, n)
	}
	interrupted := false
	for _, t := range mine {
		dir := c.Out
		if dir == "" {
			dir = t.Tune.Dir
		}
		r := shardResult{Target: t.Name}
		// Minutes per target on a week: progress as a trace's tune shows
		// it, per target (--quiet: none).
		prog := newTuneProgress(e.stderr, "tune: "+t.Name+": replays", c.Quiet)
		var shed []string         // said after the progress line
		var notes strings.Builder // the memory budget's, said there too
		res, err := tune.TuneTarget(e.ctx, api, t, now, tune.TargetOptions{Period: file.IntervalDuration(), Workers: workers, Seed: c.Seed,
			Progress: prog.replays, Size: replaySizer(&notes),
			Warn: func(msg string) { shed = append(shed, msg) }})
		prog.end(err)
		fmt.Fprint(e.stderr, notes.String())
		for _, msg := range shed {
			fmt.Fprintf(e.stderr, "warning: target %s: %s\n", t.Name, msg)
		}
		// A target's file is replaced only when its line follows: a signal
		// before the write leaves the old file (and no line), one during it
		// a new file and the line that says so.
		written := false
		if err == nil && e.ctx.Err() == nil {
			err = writeShardResult(dir, res)
			written = err == nil
		}
		if e.ctx.Err() != nil && !written {
			interrupted = true
			break
		}
		switch {
		case errors.Is(err, tune.ErrShortHistory), errors.Is(err, tune.ErrHistoryGaps):
			// A new target, or one whose history is mostly gaps: tuned by
			// a later run, once its series span an hour or the gaps have
			// left the span. Failing the Job would rerun the whole shard
			// (backoffLimitPerIndex) for nothing.
			r.Skipped = err.Error()
		case err != nil:
			failed++
			r.Error = err.Error()
		default:
			r.Path, r.Result = tune.ResultPath(dir, t.Name), &res
		}
		out = append(out, r)
		if c.Output != "json" {
			if r.Skipped != "" {
				fmt.Fprintf(e.stdout, "%s: skipped: %v\n", t.Name, err)
			} else if err != nil {
				fmt.Fprintf(e.stdout, "%s: failed: %v\n", t.Name, err)
			} else {
				// The history the data covered, and the span asked when
				// that is less (Prometheus's retention, a newer target).
				hist, short := res.Covered(time.Duration(t.Tune.History))
				hist += " of history"
				if short {
					hist += " (" + t.Tune.History.String() + " asked)"
				}
				fmt.Fprintf(e.stdout, "%s: %s (holds %v; in %.2f%% misses %.1f replica-min, out %.2f%% %.1f; %s, %d replays, %.0f CPU-s) -> %s\n", t.Name, res.Policy, res.Holds,
					res.InSample.MissPct, res.InSample.ReplicaMinutes, res.OutOfSample.MissPct, res.OutOfSample.ReplicaMinutes, hist, res.Replays, res.CPUSeconds, r.Path)
			}
		}
		if e.ctx.Err() != nil {
			interrupted = true
			break
		}
	}
	if c.Output == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Shard   string        `json:"shard"`
			Targets []shardResult `json:"targets"`
		}{fmt.Sprintf("%d/%d", i, n), out}); err != nil {
			return err
		}
	}
	if interrupted {
		// The targets done are listed above (text lines, JSON targets),
		// each file written with its line.
		return e.ctx.Err()
	}
	if failed > 0 {
		return fmt.Errorf("tune: %d of %d targets of shard %d/%d failed", failed, len(mine), i, n)
	}
	return nil
}

// writeShardResult writes a target's result (tune.WriteResult); a
// variable for the test of a signal that lands during the write.
var writeShardResult = tune.WriteResult
