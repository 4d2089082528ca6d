package replay

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/sharedtest"
	gpu "github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/trace"
)

// matrixWorkers is how many cells the matrix replays at once (each cell
// runs its policies in parallel already); -matrix-workers.
var matrixWorkers = flag.Int("matrix-workers", 2, "cells TestMatrix -update replays at once")

// matrixOnly replays the cells whose "replica / trace" matches it under
// matrixPols, logs the figures and fails on each cell's missed goals
// (docs untouched): for trying a rule on a few cells before the whole
// matrix.
var (
	matrixOnly = flag.String("matrix-only", "", "TestMatrix: replay only the cells whose \"replica / trace\" matches this regexp, log their figures, fail on their missed goals")
	matrixPols = flag.String("matrix-policies", "recommended,optimal,fixed:1,fixed:2,fixed:3", "TestMatrix -matrix-only: the policies, comma-separated (policy strings with commas: separate with ;)")
)

// matrixReplica is a column group of the generalization matrix.
type matrixReplica struct {
	name     string
	inSample bool // recommended's defaults may be chosen on it
	config   func() (gpu.Config, error)
}

// matrixReplicas are the matrix's replicas: the reference (in sample) and
// five it was not chosen on.
func matrixReplicas() []matrixReplica {
	with := matrixWith
	return []matrixReplica{
		{"H100 + Llama-3-8B (reference)", true, func() (gpu.Config, error) { return gpu.DefaultConfig(), nil }},
		{"A100-80GB + Llama-3-8B", false, with("a100-80gb", "llama-3-8b", 1)},
		{"L40S + Llama-3-8B", false, with("l40s", "llama-3-8b", 1)},
		{"4 x H100 + Llama-3.1-70B", false, with("h100-sxm", "llama-3.1-70b", 4)},
		{"2 x H200 + Mixtral-8x7B", false, with("h200", "mixtral-8x7b", 2)},
		{"calibrated H100 + Llama-3.1-8B (examples/)", false, func() (gpu.Config, error) {
			c := gpu.Calibrated()
			var err error
			if c.GPU, err = gpu.LookupGPU("h100-sxm"); err != nil {
				return c, err
			}
			if c.Model, err = gpu.LookupModel("llama-3.1-8b"); err != nil {
				return c, err
			}
			cal, err := gpu.LoadCalibration(filepath.Join("..", "..", "examples", "vllm-0.21-h100-llama-3.1-8b.calibration.json"))
			if err != nil {
				return c, err
			}
			return cal.Apply(c)
		}},
	}
}

// matrixWith is the default replica on GPU g with model m at TP degree tp
// (names from the catalog, infscale gpu --list).
func matrixWith(g, m string, tp int) func() (gpu.Config, error) {
	return func() (gpu.Config, error) {
		c := gpu.DefaultConfig()
		var err error
		if c.GPU, err = gpu.LookupGPU(g); err != nil {
			return c, err
		}
		if c.Model, err = gpu.LookupModel(m); err != nil {
			return c, err
		}
		c.TP = tp
		return c, nil
	}
}

// matrixTrace is a row of the matrix.
type matrixTrace struct {
	name  string
	spec  string
	opts  trace.Options
	onoff bool
}

// matrixOnOff are the on-off rows' mean gaps.
var matrixOnOff = []string{"30s", "90s", "300s"}

func matrixTraces() []matrixTrace {
	dir := filepath.Join("..", "..", "..", "shared", "testdata", "traces")
	var out []matrixTrace
	for s := uint64(1); s <= 10; s++ {
		out = append(out, matrixTrace{name: fmt.Sprintf("reference seed %d", s), spec: "reference", opts: trace.Options{Seed: s}})
	}
	for _, x := range []float64{1.5, 2} {
		out = append(out, matrixTrace{name: fmt.Sprintf("reference %gx", x), spec: "reference", opts: trace.Options{Seed: 1, RateScale: x}})
	}
	for _, x := range []float64{1, 3, 6} {
		out = append(out, matrixTrace{name: fmt.Sprintf("azure-conv %gx", x), spec: filepath.Join(dir, "azure-llm-2023-conv.csv"), opts: trace.Options{RateScale: x}})
	}
	out = append(out,
		matrixTrace{name: "mooncake", spec: filepath.Join(dir, "mooncake-synthetic.jsonl")},
		matrixTrace{name: "step 3-25-3", spec: "synthetic:step", opts: trace.Options{Seed: 1}},
		matrixTrace{name: "diurnal", spec: "synthetic:diurnal", opts: trace.Options{Seed: 1}})
	for _, g := range matrixOnOff {
		out = append(out, matrixTrace{name: "on-off gap " + g, spec: "synthetic:onoff,gap=" + g, opts: trace.Options{Seed: 1}, onoff: true})
	}
	return out
}

// matrixPolicies are the matrix's columns: the default set (recommended
// and optimal among them), then fixed:1..6.
func matrixPolicies() []string {
	ps := slices.Clone(DefaultPolicies)
	for n := 1; n <= 6; n++ {
		ps = append(ps, fmt.Sprintf("fixed:%d", n))
	}
	return ps
}

// matrixSubset are the cells TestMatrix replays without -update (seconds
// of CPU): one in-sample and two out-of-sample cells, on-off among them,
// under recommended and two baselines. Their figures must be the ones
// docs/evaluation/recommended.md holds, so the table stays the code's.
var matrixSubset = []struct{ replica, trace string }{
	{"H100 + Llama-3-8B (reference)", "reference seed 1"},
	{"L40S + Llama-3-8B", "on-off gap 90s"},
	{"4 x H100 + Llama-3.1-70B", "reference seed 2"},
}

var matrixSubsetPolicies = []string{"recommended", "fixed:2", "cpu:60"}

func matrixModel(t testing.TB, r matrixReplica) Model {
	t.Helper()
	c, err := r.config()
	if err != nil {
		t.Fatal(err)
	}
	m, err := gpu.New(c)
	if err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
	return m
}

func matrixSource(t testing.TB, tr matrixTrace) trace.Source {
	t.Helper()
	src, err := trace.ParseContext(context.Background(), tr.spec, tr.opts)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// matrixOnlyArgs checks -matrix-only's regexp and -matrix-policies' list
// (comma-separated, or semicolon-separated when a policy holds commas)
// before any cell is replayed; an error names the flag.
func matrixOnlyArgs(only, pols string) (*regexp.Regexp, []string, error) {
	re, err := regexp.Compile(only)
	if err != nil {
		return nil, nil, fmt.Errorf("-matrix-only %q: %v (want a Go regexp matched against \"replica / trace\")", only, err)
	}
	sep := ","
	if strings.Contains(pols, ";") {
		sep = ";"
	}
	ps := strings.Split(pols, sep)
	for _, p := range ps {
		if _, err := ParsePolicy(p); err != nil {
			return nil, nil, fmt.Errorf("-matrix-policies %q: %v", pols, err)
		}
	}
	return re, ps, nil
}

// cellText is a matrix cell without the ratio: "miss % / replica-minutes".
func cellText(r Result) string {
	return fmt.Sprintf("%.2f / %.1f", r.MissPct(), r.ReplicaMinutes())
}

// boundText is "; bound B" for a result that carries a certified lower
// bound (optimal's): B its replica-minutes, with the least miss % of any
// schedule when some requests cannot be met (Bound.Unmeetable); "" else.
func boundText(r Result) string {
	b := r.LowerBound
	if b == nil {
		return ""
	}
	t := fmt.Sprintf("; bound %.1f", b.ReplicaSeconds/60)
	if b.Unmeetable > 0 && r.Requests > 0 {
		t += fmt.Sprintf(" at >= %.2f%%", 100*float64(b.Unmeetable)/float64(r.Requests))
	}
	return t
}

// TestMatrix is the generalization matrix (docs/evaluation/recommended.md): every
// policy of the default set and fixed:1..6 on 21 traces and 6 replicas.
// With -update it replays all of it (minutes of CPU, `make matrix`),
// rewrites docs/evaluation/recommended.md with the goals' verdicts and then
// fails on each goal missed, naming it and its figures; without, it
// replays matrixSubset and checks the document holds the same figures.
func TestMatrix(t *testing.T) {
	sharedtest.Path(t, "traces", "mooncake-synthetic.jsonl")
	reps, trs, pols := matrixReplicas(), matrixTraces(), matrixPolicies()
	for _, f := range []struct {
		name  string
		given bool
	}{{"-matrix-heldout", *matrixHeldOut}, {"-matrix-save", *matrixSave != ""}, {"-matrix-against", *matrixAgainst != ""}} {
		if f.given && *matrixOnly == "" {
			t.Fatalf("%s goes with -matrix-only REGEXP (. for every cell)", f.name)
		}
	}
	// The files are checked before the replay, not after it.
	var then matrixFigures
	if *matrixAgainst != "" {
		var err error
		if then, err = loadMatrixFigures(*matrixAgainst); err != nil {
			t.Fatal(err)
		}
	}
	if *matrixSave != "" {
		if err := checkMatrixSave(*matrixSave); err != nil {
			t.Fatal(err)
		}
	}
	if *matrixHeldOut {
		reps, trs = matrixHeldOutReplicas(), matrixHeldOutTraces()
	}
	if len(matrixExtra) > 0 {
		if *matrixOnly == "" {
			t.Fatalf("-matrix-trace goes with -matrix-only REGEXP (. for every cell)")
		}
		trs = append(slices.Clone(trs), matrixExtra...)
	}
	if *matrixOnly != "" {
		re, ps, err := matrixOnlyArgs(*matrixOnly, *matrixPols)
		if err != nil {
			t.Fatal(err)
		}
		if then != nil {
			if err := checkMatrixAgainst(*matrixAgainst, then, re); err != nil {
				t.Fatal(err)
			}
		}
		type cell struct {
			rep matrixReplica
			tr  matrixTrace
			res []Result
		}
		var cells []*cell
		var wg sync.WaitGroup
		sem := make(chan struct{}, max(1, *matrixWorkers))
		for _, r := range reps {
			m := matrixModel(t, r)
			for _, tr := range trs {
				if !re.MatchString(r.name + " / " + tr.name) {
					continue
				}
				c := &cell{rep: r, tr: tr}
				cells = append(cells, c)
				wg.Go(func() {
					sem <- struct{}{}
					defer func() { <-sem }()
					c.res = runPolicies(t, matrixSource(t, tr), Config{Model: m}, ps...)
					var cs []string
					for i, x := range c.res {
						cs = append(cs, ps[i]+" "+cellText(x))
					}
					t.Logf("%s / %s: %s", r.name, tr.name, strings.Join(cs, " | "))
				})
			}
		}
		wg.Wait()
		if len(cells) == 0 {
			t.Fatalf("-matrix-only %q matches no cell (\"replica / trace\", e.g. %q)", *matrixOnly, reps[0].name+" / "+trs[0].name)
		}
		figs := matrixFigures{}
		for _, c := range cells {
			f := map[string][2]float64{}
			for i, x := range c.res {
				f[ps[i]] = [2]float64{x.MissPct(), x.ReplicaMinutes()}
			}
			figs[c.rep.name+" / "+c.tr.name] = f
		}
		// Compared before saving: SAVE and AGAINST may be the same file.
		if *matrixAgainst != "" {
			if err := compareMatrixFigures(t, *matrixAgainst, then, figs, ps, re); err != nil {
				t.Error(err)
			}
		}
		if *matrixSave != "" {
			if err := saveMatrixFigures(*matrixSave, figs); err != nil {
				t.Fatal(err)
			}
		}
		// Each cell's own goals, against the policies replayed.
		if !slices.Contains(ps, "recommended") || !slices.Contains(ps, "optimal") {
			t.Logf("-matrix-policies without recommended and optimal: no goal judged")
			return
		}
		for _, c := range cells {
			v := matrixGoals([]matrixReplica{c.rep}, []matrixTrace{c.tr}, ps, func(int, int) []Result { return c.res }, true)
			for _, m := range v.missed {
				t.Errorf("goal missed: %s", m)
			}
		}
		return
	}
	if !*updateOptimal {
		doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "evaluation", "recommended.md"))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range matrixSubset {
			ri := slices.IndexFunc(reps, func(r matrixReplica) bool { return r.name == c.replica })
			ti := slices.IndexFunc(trs, func(r matrixTrace) bool { return r.name == c.trace })
			res := runPolicies(t, matrixSource(t, trs[ti]), Config{Model: matrixModel(t, reps[ri])}, matrixSubsetPolicies...)
			row := matrixRow(string(doc), c.replica, c.trace)
			if row == nil {
				t.Errorf("docs/evaluation/recommended.md has no row %s under %s: regenerate it (make matrix)", c.trace, c.replica)
				continue
			}
			for i, p := range matrixSubsetPolicies {
				j := slices.Index(pols, p)
				if got, want := cellText(res[i]), row[j]; !strings.HasPrefix(want, got+" ") {
					t.Errorf("%s, %s, %s: replays %s, docs/evaluation/recommended.md says %s: regenerate it (make matrix)", c.replica, c.trace, p, got, want)
				}
			}
		}
		return
	}
	type cell struct {
		res  []Result
		wall time.Duration
	}
	cells := make([][]cell, len(reps))
	models := make([]Model, len(reps))
	for i, r := range reps {
		cells[i] = make([]cell, len(trs))
		models[i] = matrixModel(t, r)
	}
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, *matrixWorkers))
	for i := range reps {
		for j, tr := range trs {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				t0 := time.Now()
				res := runPolicies(t, matrixSource(t, tr), Config{Model: models[i]}, pols...)
				cells[i][j] = cell{res, time.Since(t0)}
				t.Logf("%s / %s: %s", reps[i].name, tr.name, time.Since(t0).Round(time.Millisecond))
			})
		}
	}
	wg.Wait()
	wall := time.Since(start)
	var b strings.Builder
	res := func(i, j int) []Result { return cells[i][j].res }
	v := matrixGoals(reps, trs, pols, res, false)
	writeMatrix(&b, reps, trs, pols, res, v)
	load := ""
	if l, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = ", load average " + strings.Join(strings.Fields(string(l))[:3], " ") + " at the end"
	}
	fmt.Fprintf(&b, "\nThe full matrix took %s of wall time here (`make matrix`, %d cells at once on a shared 2-core machine%s).\n", wall.Round(time.Second), *matrixWorkers, load)
	if err := os.WriteFile(filepath.Join("..", "..", "docs", "evaluation", "recommended.md"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// The page is written either way (it is the record); a missed goal
	// fails the run, one error per goal with its figures.
	for _, m := range v.missed {
		t.Errorf("goal missed: %s", m)
	}
}

// matrixRow finds the cells of trace's row in replica's table of doc.
func matrixRow(doc, replica, trace string) []string {
	_, sec, ok := strings.Cut(doc, "\n### "+replica)
	if !ok {
		return nil
	}
	if i := strings.Index(sec, "\n### "); i >= 0 {
		sec = sec[:i]
	}
	for _, line := range strings.Split(sec, "\n") {
		cols := strings.Split(line, " | ")
		if len(cols) > 1 && strings.TrimPrefix(cols[0], "| ") == trace {
			cols = cols[1:]
			cols[len(cols)-1] = strings.TrimSuffix(cols[len(cols)-1], " |")
			return cols
		}
	}
	return nil
}

// matrixColumn is one replica's summary over its traces.
type matrixColumn struct {
	logSum             float64
	n                  int // the goal's cells
	qualMissOver       int
	qualReachable      int // of qualMissOver, cells a policy of the default set meets
	dominated, onoffOK int
	onoffN             int
	worst              float64
	worstAt            string
	// boundLogSum and boundN: optimal's replica-minutes over its certified
	// lower bound's (Result.LowerBound) on the goal's cells that have one.
	boundLogSum float64
	boundN      int
}

// boundGeo is the geometric mean of optimal's replica-minutes over its
// certified lower bound's on the goal's cells (NaN without any).
func (c matrixColumn) boundGeo() float64 {
	if c.boundN == 0 {
		return math.NaN()
	}
	return math.Exp(c.boundLogSum / float64(c.boundN))
}

// geo is the geometric mean of recommended's replica-minutes over
// optimal's on the goal's cells (1 without any).
func (c matrixColumn) geo() float64 { return math.Exp(c.logSum / float64(max(c.n, 1))) }

// matrixVerdict is the goals' outcome on a matrix: each replica's summary,
// every goal missed (one line each, naming the cell and its figures), and
// the cells where a causal policy beats optimal.
type matrixVerdict struct {
	cols    []matrixColumn
	missed  []string
	beatOpt []string
}

// matrixGoals judges the goals of the page's preamble (issue #20) on
// res(i, j), replica i's results on trace j in pols' order (pols holding
// recommended and optimal). cellsOnly judges each cell's goals alone,
// for a few cells (-matrix-only): the geometric means are over every
// trace of a replica, the goal's and the in-sample one's, and are left
// out.
func matrixGoals(reps []matrixReplica, trs []matrixTrace, pols []string, res func(i, j int) []Result, cellsOnly bool) matrixVerdict {
	ri, oi := slices.Index(pols, "recommended"), slices.Index(pols, "optimal")
	dominates := func(r, rec Result) bool {
		return r.MissPct() <= rec.MissPct() && r.ReplicaMinutes() <= rec.ReplicaMinutes() &&
			(r.MissPct() < rec.MissPct() || r.ReplicaMinutes() < rec.ReplicaMinutes())
	}
	causal := func(p string) bool { return p != "optimal" && p != "oracle" }
	v := matrixVerdict{cols: make([]matrixColumn, len(reps))}
	for i, rp := range reps {
		s := &v.cols[i]
		for j, tr := range trs {
			rs := res(i, j)
			rec, opt := rs[ri], rs[oi]
			dominated := false
			for k, r := range rs {
				if k != ri && causal(pols[k]) && dominates(r, rec) {
					dominated = true
					v.missed = append(v.missed, fmt.Sprintf("%s, %s: %s (%s) dominates recommended (%s)", rp.name, tr.name, pols[k], cellText(r), cellText(rec)))
				}
				if causal(pols[k]) && r.MissPct() <= opt.MissPct() && r.ReplicaMinutes() < 0.99*opt.ReplicaMinutes() {
					v.beatOpt = append(v.beatOpt, fmt.Sprintf("%s, %s: %s %s against optimal's %s", rp.name, tr.name, pols[k], cellText(r), cellText(opt)))
				}
			}
			if dominated {
				s.dominated++
			}
			// A cell the goal applies to: optimal misses nothing and some
			// fixed:N misses nothing at <= 2x optimal's replica-minutes.
			qual := false
			if opt.Misses() == 0 {
				for k, r := range rs {
					if strings.HasPrefix(pols[k], "fixed:") && r.Misses() == 0 && r.ReplicaMinutes() <= 2*opt.ReplicaMinutes() {
						qual = true
					}
				}
			}
			if qual {
				ratio := rec.ReplicaMinutes() / opt.ReplicaMinutes()
				s.logSum += math.Log(ratio)
				s.n++
				if b := opt.LowerBound; b != nil && b.ReplicaSeconds > 0 {
					s.boundLogSum += math.Log(opt.ReplicaMinutes() / (b.ReplicaSeconds / 60))
					s.boundN++
				}
				if ratio > s.worst {
					s.worst, s.worstAt = ratio, tr.name
				}
				if rec.MissPct() > 0.1 {
					s.qualMissOver++
					// Is the goal within a causal policy's reach here? The
					// default set's policies that meet it on its own terms.
					var meets []string
					for k, r := range rs {
						if k != ri && causal(pols[k]) && !strings.HasPrefix(pols[k], "fixed:") && r.MissPct() <= 0.1 && r.ReplicaMinutes() <= 2*opt.ReplicaMinutes() {
							meets = append(meets, pols[k]+" ("+cellText(r)+")")
						}
					}
					reach := "no policy of the default set meets it"
					if len(meets) > 0 {
						reach = "met by " + strings.Join(meets, ", ")
						s.qualReachable++
					}
					v.missed = append(v.missed, fmt.Sprintf("%s, %s: recommended misses %.2f%% (> 0.1%%) where optimal misses none and a fixed count none at <= 2x its replica-minutes; %s", rp.name, tr.name, rec.MissPct(), reach))
				}
			}
			if tr.onoff {
				s.onoffN++
				if rec.MissPct() <= opt.MissPct()+0.5 && rec.ReplicaMinutes() <= 1.5*opt.ReplicaMinutes() {
					s.onoffOK++
				} else {
					v.missed = append(v.missed, fmt.Sprintf("%s, %s: recommended %s (%.2fx) against optimal's %s: want misses <= optimal's + 0.5 points at <= 1.5x", rp.name, tr.name, cellText(rec), rec.ReplicaMinutes()/opt.ReplicaMinutes(), cellText(opt)))
				}
			}
		}
	}
	if cellsOnly {
		return v
	}
	in := v.cols[0].geo()
	for i, rp := range reps {
		g := v.cols[i].geo()
		if g > 1.3 {
			v.missed = append(v.missed, fmt.Sprintf("%s: geometric mean %.2fx optimal's replica-minutes over the goal's cells (> 1.3x)", rp.name, g))
		}
		if !rp.inSample && math.Abs(g-in) > 0.1 {
			v.missed = append(v.missed, fmt.Sprintf("%s: geometric mean %.2fx, more than 0.1x from the in-sample %.2fx", rp.name, g, in))
		}
	}
	return v
}

// writeMatrix writes docs/evaluation/recommended.md: the goals' summary
// (v, from matrixGoals), then one table per replica. res(i, j) are
// replica i's results on trace j in pols' order.
func writeMatrix(b *strings.Builder, reps []matrixReplica, trs []matrixTrace, pols []string, res func(i, j int) []Result, v matrixVerdict) {
	oi := slices.Index(pols, "optimal")
	b.WriteString("# `recommended` on traffic and replicas it was not chosen on\n\n")
	b.WriteString("Generated by `make matrix` (`go test ./pkg/replay -run TestMatrix -update -timeout 0`); a plain\n")
	b.WriteString("`go test ./pkg/replay -run TestMatrix` replays three cells of it and checks this page holds their figures.\n")
	b.WriteString("2 s TTFT SLO, 15 s period. Each cell is SLO miss % / replica-minutes (x optimal's replica-minutes).\n")
	fmt.Fprintf(b, "`recommended` is `%s` with the lookahead set to the replica's cold start + %g s, the ttft target to the SLO\n", Recommended, RecommendedLead.Seconds())
	fmt.Fprintf(b, "and the queuewait target to a fifth of it, each latency guard bounded by the replica's capacity, and the cost-aware hold with a\n")
	fmt.Fprintf(b, "break-even of %d cold starts, a counted ramp projected at its slope + z standard errors (z the normal quantile of cold start /\n", RecommendedBreakEven)
	fmt.Fprintf(b, "(cold start + the %g s window): 0.26 at 91 s) and its rise capped at a quantile of the rises past ramps reached (docs/recommend.md). Its numeric defaults (utilisation, lookahead lead, window) were chosen on the\n", RecommendedDownWindow.Seconds())
	b.WriteString("H100 + Llama-3-8B replica only: **every other replica is out of sample** for them. The hold's break-even, the ramp bound and the guards'\n")
	b.WriteString("capacity bound are derived from the replica (cold start, capacity), not fitted; their design was checked on a few cells of\n")
	b.WriteString("every replica while it was written, so for the rules' form the other columns are not strictly unseen.\n\n")
	b.WriteString("Traces: the built-in reference trace (seeds 1-10; seed 1 at 1.5x and 2x the rate), azure-llm-2023-conv\n")
	b.WriteString("(1x, 3x, 6x), mooncake-synthetic, `synthetic:step` (3 -> 25 -> 3 req/s), `synthetic:diurnal` (a day),\n")
	b.WriteString("and `synthetic:onoff,gap=30s|90s|300s` (seed 1): bursts of 5-20 requests in busy periods of 60 s on\n")
	b.WriteString("average, separated by silent gaps drawn from a Pareto distribution (shape 1.5) with that mean; 2.5 req/s\n")
	b.WriteString("over the hour (docs/simulate.md).\n\n")
	b.WriteString("Held-out cells (`make heldout`: `-matrix-heldout` with `-matrix-only`): the five uncalibrated replicas above and six\n")
	b.WriteString("others (L4 + Llama-3-8B, A10G + Qwen2.5-7B, H100 PCIe + Mistral-Nemo-12B, 2 x A100-80GB + Yi-34B, 2 x B200 +\n")
	b.WriteString("Llama-3.1-70B, MI300X + Qwen2.5-72B) on fifteen traces the matrix does not hold (reference seeds 11 and 12, seed 13\n")
	b.WriteString("at 1.25x, seed 22 at 1.3x and seed 25 at 0.8x, four other on-off settings, azure-conv 2x and 4.5x, mooncake at 0.7x,\n")
	b.WriteString("a 30-minute Poisson, a 4 -> 16 -> 4 step and a 12-hour day). A decision change is checked there before this page is regenerated (`make heldout\n")
	b.WriteString("SAVE=before.json`, then `make heldout AGAINST=before.json` with the change: each changed cell, the geometric mean\n")
	b.WriteString("of the replica-minutes ratios and the change in misses); their figures are not on this page. `TRACES=\"FILE[@X] ...\"`\n")
	b.WriteString("adds traces of your own (e.g. the Azure LLM inference trace's code file) as held-out rows.\n\n")
	b.WriteString("Goals (issue #20): on every cell no policy of the default set and no fixed:N dominates recommended; where\n")
	b.WriteString("optimal misses nothing and some fixed:N misses nothing at <= 2x optimal's replica-minutes (the goal's cells),\n")
	b.WriteString("recommended misses <= 0.1%, its geometric-mean replica-minutes there <= 1.3x optimal's and each\n")
	b.WriteString("out-of-sample replica's within 0.1x of the in-sample one's; on the on-off traces, misses <= optimal's + 0.5\n")
	b.WriteString("points at <= 1.5x its replica-minutes.\n\n")
	b.WriteString("Where recommended misses a goal's cell, the page says whether a causal policy of the default set (the columns\n")
	b.WriteString("before recommended but fixed:N, oracle and optimal) meets that cell on the goal's own terms (<= 0.1% at <= 2x\n")
	b.WriteString("optimal's replica-minutes): where none does, no causal rule of the set reaches the goal there either; the\n")
	b.WriteString("first-ramp cells are of that kind, the reference ramp starting within a cold start of the trace's start.\n")
	b.WriteString("What holds them is a floor chosen on the target's own traffic: `tune` on each cell where optimal misses nothing\n")
	b.WriteString("returns a policy that holds, 0.06% misses at most on the whole cell, a floor under the demand signal on the\n")
	b.WriteString("reference ramps (docs/tune.md, \"On every matrix cell\"), and serve's `tune:` block does it per target.\n\n")
	b.WriteString("## Summary\n\n")
	b.WriteString("| replica | sample | cold start | goal's cells | geometric mean (x optimal) | worst | goal's cells missing > 0.1% | of them, met by a default-set policy | cells where recommended is dominated | on-off goal met | optimal over its certified bound |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, rp := range reps {
		s := v.cols[i]
		sample := "out"
		if rp.inSample {
			sample = "in"
		}
		c, _ := rp.config()
		m, _ := gpu.New(c)
		bound := "-"
		if g := s.boundGeo(); !math.IsNaN(g) {
			bound = fmt.Sprintf("%.2fx", g)
		}
		fmt.Fprintf(b, "| %s | %s | %.0f s | %d of %d | %.2fx | %.2fx (%s) | %d | %d | %d | %d of %d | %s |\n", rp.name, sample, m.ColdStart(), s.n, len(trs), s.geo(), s.worst, s.worstAt, s.qualMissOver, s.qualReachable, s.dominated, s.onoffOK, s.onoffN, bound)
	}
	if len(v.missed) == 0 {
		b.WriteString("\nEvery goal holds.\n")
	} else {
		fmt.Fprintf(b, "\n### Goals missed (%d; `make matrix` fails on each)\n\n", len(v.missed))
		for _, m := range v.missed {
			b.WriteString("- " + m + "\n")
		}
	}
	b.WriteString("\n### Cells where a causal policy beats optimal by more than 1%\n\n")
	b.WriteString("`optimal` is a search, not a certified bound (issue #20 item 3); where a causal policy reaches optimal's misses\n")
	b.WriteString("at less than 0.99x its replica-minutes the ratios of that cell understate the gap to the limit. Each optimal cell\n")
	b.WriteString("also gives the certified lower bound computed beside the search (`bound`: replica-minutes no schedule meeting\n")
	b.WriteString("every meetable request can go below, a relaxation that drops queueing, the router and decode work, keeping the\n")
	b.WriteString("batch slots and KV a request holds from admission to its last token: docs/simulate.md;\n")
	b.WriteString("with the least miss % any schedule has where some requests cannot be met). The Summary's last column is optimal\n")
	b.WriteString("over that bound on the goal's cells (geometric mean): the most optimal's ratios could understate the gap by.\n\n")
	if len(v.beatOpt) == 0 {
		b.WriteString("None.\n")
	}
	for _, m := range v.beatOpt {
		b.WriteString("- " + m + "\n")
	}
	for i, rp := range reps {
		sample := "out of sample"
		if rp.inSample {
			sample = "in sample"
		}
		fmt.Fprintf(b, "\n### %s (%s)\n\n", rp.name, sample)
		b.WriteString("| trace | " + strings.Join(pols, " | ") + " |\n|---|" + strings.Repeat("---|", len(pols)) + "\n")
		for j, tr := range trs {
			rs := res(i, j)
			opt := rs[oi]
			cs := make([]string, len(rs))
			for k, r := range rs {
				cs[k] = fmt.Sprintf("%s (%.2fx%s)", cellText(r), r.ReplicaMinutes()/opt.ReplicaMinutes(), boundText(r))
			}
			fmt.Fprintf(b, "| %s | %s |\n", tr.name, strings.Join(cs, " | "))
		}
	}
	b.WriteString("\n`hpa(recommended)` is the Kubernetes HPA consuming recommended's output (an External metric at AverageValue 1,\n")
	b.WriteString("the HPA's 300 s scale-down window): what the consumer adds on top. `oracle` knows the future arrivals; it and\n")
	b.WriteString("`optimal` are not causal and are left out of the dominance check.\n")
}

// TestMatrixGoals judges a constructed matrix of two replicas (the
// in-sample one and one out of sample) on a reference row and an on-off
// row, worked by hand. Replica 0: on the reference row optimal misses none
// at 10 replica-minutes and fixed:1 none at 15 (<= 2 x 10: the goal's
// cell), recommended misses 5 of 1,000 = 0.50% (> 0.1%) at 12 (1.2x); on
// the on-off row recommended misses none at 16 = 1.6x optimal's 10 (> 1.5x)
// and fixed:1 at 15 dominates it; its geometric mean sqrt(1.2 x 1.6) =
// 1.39x > 1.3x. Replica 1 meets every cell's goal at 1.0x, more than 0.1x
// from the in-sample 1.39x. Five goals missed, each named with its figures;
// judged cell by cell (-matrix-only) only the first three.
func TestMatrixGoals(t *testing.T) {
	reps := matrixReplicas()[:2]
	trs := []matrixTrace{{name: "reference seed 1"}, {name: "on-off gap 90s", onoff: true}}
	pols := []string{"queue:24", "cpu:60", "recommended", "optimal", "fixed:1", "fixed:2"}
	r := func(late int64, rm float64) Result {
		return Result{Requests: 1000, Late: late, ReplicaSeconds: 60 * rm}
	}
	// queue:24 meets replica 0's reference cell (no miss at 19 <= 2 x 10);
	// cpu:60 misses 2 of 1,000 = 0.2% there (> 0.1%) at 13 (more than
	// recommended's 12: no dominance), and elsewhere costs 30.
	cells := [][][]Result{
		{{r(0, 19), r(2, 13), r(5, 12), r(0, 10), r(0, 15), r(0, 30)}, {r(0, 30), r(0, 30), r(0, 16), r(0, 10), r(0, 15), r(0, 30)}},
		{{r(0, 30), r(0, 30), r(0, 10), r(0, 10), r(0, 20), r(0, 40)}, {r(0, 30), r(0, 30), r(0, 10), r(0, 10), r(0, 20), r(0, 40)}},
	}
	res := func(i, j int) []Result { return cells[i][j] }
	want := []string{
		"H100 + Llama-3-8B (reference), reference seed 1: recommended misses 0.50% (> 0.1%) where optimal misses none and a fixed count none at <= 2x its replica-minutes; met by queue:24 (0.00 / 19.0)",
		"H100 + Llama-3-8B (reference), on-off gap 90s: fixed:1 (0.00 / 15.0) dominates recommended (0.00 / 16.0)",
		"H100 + Llama-3-8B (reference), on-off gap 90s: recommended 0.00 / 16.0 (1.60x) against optimal's 0.00 / 10.0: want misses <= optimal's + 0.5 points at <= 1.5x",
		"H100 + Llama-3-8B (reference): geometric mean 1.39x optimal's replica-minutes over the goal's cells (> 1.3x)",
		"A100-80GB + Llama-3-8B: geometric mean 1.00x, more than 0.1x from the in-sample 1.39x",
	}
	v := matrixGoals(reps, trs, pols, res, false)
	if !slices.Equal(v.missed, want) {
		t.Errorf("missed:\n%s\nwant:\n%s", strings.Join(v.missed, "\n"), strings.Join(want, "\n"))
	}
	if c := v.cols[0]; c.n != 2 || c.qualMissOver != 1 || c.qualReachable != 1 || c.dominated != 1 || c.onoffOK != 0 || c.onoffN != 1 {
		t.Errorf("replica 0's summary %+v", c)
	}
	if v := matrixGoals(reps, trs, pols, res, true); !slices.Equal(v.missed, want[:3]) {
		t.Errorf("cell by cell: %q, want the first three", v.missed)
	}
	var b strings.Builder
	writeMatrix(&b, reps, trs, pols, res, v)
	if !strings.Contains(b.String(), "\n### Goals missed (5; `make matrix` fails on each)\n\n- "+want[0]+"\n") {
		t.Errorf("the page does not list the missed goals:\n%s", b.String())
	}
}

// TestMatrixBound checks the certified bound's place on the page, worked
// by hand: replica 0's two goal cells have optimal at 12 and 10
// replica-minutes over bounds of 480 s (8.0) and 600 s (10.0), ratios 1.5
// and 1.0, geometric mean sqrt(1.5) = 1.2247 -> "1.22x"; replica 1's
// optimal carries no bound ("-"). A bound with 3 of 1,000 requests
// unmeetable reads "at >= 0.30%".
func TestMatrixBound(t *testing.T) {
	reps := matrixReplicas()[:2]
	trs := []matrixTrace{{name: "reference seed 1"}, {name: "reference seed 2"}}
	pols := []string{"recommended", "optimal", "fixed:1"}
	r := func(rm float64, b *Bound) Result {
		return Result{Requests: 1000, ReplicaSeconds: 60 * rm, LowerBound: b}
	}
	cells := [][][]Result{
		{{r(13, nil), r(12, &Bound{ReplicaSeconds: 480}), r(15, nil)}, {r(11, nil), r(10, &Bound{ReplicaSeconds: 600, Unmeetable: 3}), r(15, nil)}},
		{{r(13, nil), r(12, nil), r(15, nil)}, {r(11, nil), r(10, nil), r(15, nil)}},
	}
	res := func(i, j int) []Result { return cells[i][j] }
	v := matrixGoals(reps, trs, pols, res, false)
	if g := v.cols[0].boundGeo(); math.Abs(g-math.Sqrt(1.5)) > 1e-12 {
		t.Errorf("replica 0: optimal over its bound %v, want sqrt(1.5)", g)
	}
	if g := v.cols[1].boundGeo(); !math.IsNaN(g) {
		t.Errorf("replica 1 has no bound: %v, want NaN", g)
	}
	var b strings.Builder
	writeMatrix(&b, reps, trs, pols, res, v)
	page := b.String()
	for _, want := range []string{
		"| 0 of 0 | 1.22x |\n", // no on-off row: 0 of 0
		"| 0 of 0 | - |\n",
		"| reference seed 1 | 0.00 / 13.0 (1.08x) | 0.00 / 12.0 (1.00x; bound 8.0) | 0.00 / 15.0 (1.25x) |\n",
		"| reference seed 2 | 0.00 / 11.0 (1.10x) | 0.00 / 10.0 (1.00x; bound 10.0 at >= 0.30%) | 0.00 / 15.0 (1.50x) |\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page has no %q:\n%s", want, page)
		}
	}
}
