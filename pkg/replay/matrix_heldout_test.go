package replay

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/trace"
)

// The held-out cells: replicas and traces that neither the matrix nor
// recommended's rules were chosen on, for checking a decision change out of
// sample before the matrix page is regenerated (docs/evaluation/recommended.md,
// "Held-out cells"). They are never written to the page.
var (
	matrixHeldOut = flag.Bool("matrix-heldout", false, "TestMatrix -matrix-only: replay the held-out cells (replicas and traces the matrix was not chosen on) instead of the matrix's")
	matrixSave    = flag.String("matrix-save", "", "TestMatrix -matrix-only: write the cells' figures (miss % and replica-minutes per policy) to this JSON file")
	matrixAgainst = flag.String("matrix-against", "", "TestMatrix -matrix-only: compare the cells' figures with a -matrix-save file: log each changed cell and, per policy, the geometric mean of the replica-minutes ratios and the change in misses")
	matrixExtra   []matrixTrace
)

func init() {
	flag.Func("matrix-trace", "TestMatrix -matrix-only: also replay this trace on every replica, as --trace takes it (a file or a synthetic spec), with @X for a rate scale (e.g. AzureLLMInferenceTrace_code.csv@2); repeatable", func(v string) error {
		tr, err := parseMatrixTrace(v)
		if err == nil {
			err = checkMatrixTraceName(matrixExtra, tr)
		}
		if err == nil {
			matrixExtra = append(matrixExtra, tr)
		}
		return err
	})
}

// parseMatrixTrace reads -matrix-trace's SPEC[@X]: a trace as --trace takes
// it and an optional rate scale X > 0. The row is named by the spec (a
// file by its base name) and the scale, e.g. "AzureLLMInferenceTrace_code.csv 2x".
// The trace is opened here, so a missing file or a bad spec fails before
// any replay (the flag package names the flag and the value).
func parseMatrixTrace(v string) (matrixTrace, error) {
	spec, opts := v, trace.Options{Seed: 1}
	var name string
	if i := strings.LastIndex(v, "@"); i >= 0 {
		x, err := strconv.ParseFloat(v[i+1:], 64)
		if err != nil || !(x > 0) || math.IsInf(x, 0) {
			return matrixTrace{}, fmt.Errorf("the rate scale after @ must be a number above 0, e.g. %s@2", v[:i])
		}
		spec, opts.RateScale = v[:i], x
		name = filepath.Base(spec) + " " + strconv.FormatFloat(x, 'g', -1, 64) + "x"
	} else {
		name = filepath.Base(spec)
	}
	if spec == "" {
		return matrixTrace{}, errors.New("want a trace (a file or a synthetic spec), e.g. AzureLLMInferenceTrace_code.csv@2")
	}
	src, err := trace.ParseContext(context.Background(), spec, opts)
	if err != nil {
		return matrixTrace{}, err
	}
	if err := checkMatrixTrace(src); err != nil {
		return matrixTrace{}, err
	}
	return matrixTrace{name: name, spec: spec, opts: opts}, nil
}

// checkMatrixTraceName refuses a -matrix-trace whose row name (the file's
// base name and the scale) one given before has: the cells would share a
// name, and -matrix-save keeps one of them (-matrix-against compares it
// with either).
func checkMatrixTraceName(given []matrixTrace, tr matrixTrace) error {
	for _, g := range given {
		if g.name == tr.name {
			return fmt.Errorf("%s and %s are both rows named %q (a file's base name and the scale): give the files different names", g.spec, tr.spec, tr.name)
		}
	}
	return nil
}

// checkMatrixTrace reads src through once, as simulate does before a
// replay: a bad row, a trace with no requests or one spanning less than the
// matrix's 15 s period (after the rate scale) is an error before any cell
// is replayed, not a failure in each replica's cell.
func checkMatrixTrace(src trace.Source) error {
	const period = 15.0 // the matrix's Config.Period (its default)
	_, last, err := trace.Check(context.Background(), src)
	if err != nil {
		return err
	}
	if span := max(src.Duration, last); span < period {
		return fmt.Errorf("%s spans %.3g s (after the rate scale), less than the matrix's %g s period, so no policy would decide: give a longer trace or a smaller scale after @", src.Name, span, period)
	}
	return nil
}

// matrixHeldOutReplicas are the matrix's uncalibrated replicas and six
// more: other GPUs (slower, smaller, AMD), other models and TP degrees.
func matrixHeldOutReplicas() []matrixReplica {
	with := matrixWith
	out := slices.DeleteFunc(matrixReplicas(), func(r matrixReplica) bool { return strings.HasPrefix(r.name, "calibrated") })
	return append(out,
		matrixReplica{"L4 + Llama-3-8B", false, with("l4", "llama-3-8b", 1)},
		matrixReplica{"A10G + Qwen2.5-7B", false, with("a10g", "qwen2.5-7b", 1)},
		matrixReplica{"H100 PCIe + Mistral-Nemo-12B", false, with("h100-pcie", "mistral-nemo-12b", 1)},
		matrixReplica{"2 x A100-80GB + Yi-34B", false, with("a100-80gb", "yi-34b", 2)},
		matrixReplica{"2 x B200 + Llama-3.1-70B", false, with("b200", "llama-3.1-70b", 2)},
		matrixReplica{"MI300X + Qwen2.5-72B", false, with("mi300x", "qwen2.5-72b", 1)},
	)
}

// matrixHeldOutTraces are traces of the matrix's kinds at seeds, rates and
// settings the matrix does not hold.
func matrixHeldOutTraces() []matrixTrace {
	dir := filepath.Join("..", "..", "..", "shared", "testdata", "traces")
	azure, mooncake := filepath.Join(dir, "azure-llm-2023-conv.csv"), filepath.Join(dir, "mooncake-synthetic.jsonl")
	return []matrixTrace{
		{name: "reference seed 11", spec: "reference", opts: trace.Options{Seed: 11}},
		{name: "reference seed 12", spec: "reference", opts: trace.Options{Seed: 12}},
		{name: "reference seed 13 1.25x", spec: "reference", opts: trace.Options{Seed: 13, RateScale: 1.25}},
		// A ramp at a smaller rate than the matrix's, whose trend reads as
		// noise between decisions on small replicas (L4), and one steeper.
		{name: "reference seed 25 0.8x", spec: "reference", opts: trace.Options{Seed: 25, RateScale: 0.8}},
		{name: "reference seed 22 1.3x", spec: "reference", opts: trace.Options{Seed: 22, RateScale: 1.3}},
		{name: "on-off gap 45s seed 51", spec: "synthetic:onoff,gap=45s", opts: trace.Options{Seed: 51}, onoff: true},
		{name: "on-off gap 60s seed 7", spec: "synthetic:onoff,gap=60s", opts: trace.Options{Seed: 7}, onoff: true},
		{name: "on-off gap 180s seed 11", spec: "synthetic:onoff,gap=180s", opts: trace.Options{Seed: 11}, onoff: true},
		{name: "on-off rate=5,on=120s,gap=120s seed 3", spec: "synthetic:onoff,rate=5,on=120s,gap=120s", opts: trace.Options{Seed: 3}, onoff: true},
		{name: "azure-conv 2x", spec: azure, opts: trace.Options{RateScale: 2}},
		{name: "azure-conv 4.5x", spec: azure, opts: trace.Options{RateScale: 4.5}},
		{name: "mooncake 0.7x", spec: mooncake, opts: trace.Options{RateScale: 0.7}},
		{name: "poisson 8 req/s 30m seed 5", spec: "synthetic:poisson,rate=8,duration=30m", opts: trace.Options{Seed: 5}},
		{name: "step 4-16-4 seed 2", spec: "synthetic:step,low=4,high=16,at=900s,for=900s,duration=2700s", opts: trace.Options{Seed: 2}},
		{name: "diurnal 2-18 12h seed 3", spec: "synthetic:diurnal,trough=2,peak=18,peakhour=9,duration=12h", opts: trace.Options{Seed: 3}},
	}
}

// matrixFigures are a -matrix-only run's figures: cell ("replica / trace")
// -> policy -> [miss %, replica-minutes].
type matrixFigures map[string]map[string][2]float64

// saveMatrixFigures writes figs to path as JSON; an error names the file
// and the flag.
func saveMatrixFigures(path string, figs matrixFigures) error {
	b, err := json.MarshalIndent(figs, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("-matrix-save %s: %w (the directory must exist)", path, err)
	}
	return nil
}

// checkMatrixSave fails before any replay when the -matrix-save file
// cannot be written: it is a directory, or its directory is missing or not
// a directory.
func checkMatrixSave(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("-matrix-save %s: a directory (want a file name, e.g. %s)", path, filepath.Join(path, "before.json"))
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return fmt.Errorf("-matrix-save %s: directory %s: %w (create it, or save elsewhere)", path, dir, err)
	}
	return nil
}

// loadMatrixFigures reads a -matrix-save file; an error names the file
// and what to give instead.
func loadMatrixFigures(path string) (matrixFigures, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-matrix-against %s: %w (want a file written by -matrix-save: make heldout SAVE=FILE first)", path, err)
	}
	var then matrixFigures
	if err := json.Unmarshal(b, &then); err != nil {
		return nil, fmt.Errorf("-matrix-against %s: %v (want a file written by -matrix-save: make heldout SAVE=FILE)", path, err)
	}
	if then == nil {
		return nil, fmt.Errorf("-matrix-against %s: JSON null, no figures (want a file written by -matrix-save: make heldout SAVE=FILE)", path)
	}
	n := 0
	for _, c := range then {
		n += len(c)
	}
	if n == 0 {
		return nil, fmt.Errorf("-matrix-against %s: no cells with figures (%d cells, no policy's miss %% and replica-minutes), nothing to compare with (want a file written by -matrix-save: make heldout SAVE=FILE)", path, len(then))
	}
	return then, nil
}

// checkMatrixAgainst fails before any replay when none of the
// -matrix-against file's cells (then) is one -matrix-only's regexp re
// selects: the run would compare nothing (a file of the other cell set,
// with or without -matrix-heldout, or a regexp for other cells).
func checkMatrixAgainst(path string, then matrixFigures, re *regexp.Regexp) error {
	var cells []string
	for k := range then {
		if re.MatchString(k) {
			return nil
		}
		cells = append(cells, k)
	}
	sort.Strings(cells)
	return fmt.Errorf("-matrix-against %s: none of its %d cells is one -matrix-only %q selects (its first: %q): nothing would be compared (the file saved with -matrix-heldout and this run without, or the other way, or a narrower -matrix-only)", path, len(cells), re, cells[0])
}

// matrixDiff is a -matrix-against comparison both ways (diffMatrixFigures).
type matrixDiff struct {
	// Policies are the policies run now, each with its sums over the cells.
	Policies map[string]*matrixPolicyDiff
	// Changed are the cells in both whose figures differ, one line each
	// ("CELL, POLICY: miss / rmin -> miss / rmin"), in cell order.
	Changed []string
	// Unrun are the file's cells that -matrix-only selects but that were
	// not run now (renamed, removed, or the other cell set), sorted;
	// Outside counts the file's cells it does not select (left out by the
	// user's narrower regexp, not compared).
	Unrun   []string
	Outside int
}

// matrixPolicyDiff is one policy's comparison: N cells in both, of which
// Changed differ; NotInFile cells run now that the file lacks; NotRunNow
// cells of the file (selected by -matrix-only) not run now; LogRatio the
// summed log of the replica-minutes ratios (now / then) over the cells in
// both (with replica time on both sides); DMiss the summed change in miss
// percentage points; Up and Down the cells whose misses rose or fell by
// more than 0.1 point.
type matrixPolicyDiff struct {
	N, Changed, NotInFile, NotRunNow, Up, Down int
	LogRatio, DMiss                            float64
}

// diffMatrixFigures compares figs (run now, its policies ps) with the
// -matrix-against file's then, both ways, for the cells re selects: a
// cell of the file the run left out by a narrower -matrix-only is not
// missing (it was not asked for), and a policy of the file that
// -matrix-policies left out is not compared.
func diffMatrixFigures(then, figs matrixFigures, ps []string, re *regexp.Regexp) matrixDiff {
	d := matrixDiff{Policies: map[string]*matrixPolicyDiff{}}
	for _, p := range ps {
		d.Policies[p] = &matrixPolicyDiff{}
	}
	var keys []string
	for k := range figs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, p := range ps {
			now, ok := figs[k][p]
			if !ok {
				continue
			}
			s := d.Policies[p]
			old, ok := then[k][p]
			if !ok {
				s.NotInFile++
				continue
			}
			s.N++
			if old[1] > 0 && now[1] > 0 {
				s.LogRatio += math.Log(now[1] / old[1])
			}
			s.DMiss += now[0] - old[0]
			switch dm := now[0] - old[0]; {
			case dm > 0.1:
				s.Up++
			case dm < -0.1:
				s.Down++
			}
			if now != old {
				s.Changed++
				d.Changed = append(d.Changed, fmt.Sprintf("%s, %s: %.2f / %.1f -> %.2f / %.1f", k, p, old[0], old[1], now[0], now[1]))
			}
		}
	}
	for k, c := range then {
		if _, ok := figs[k]; ok {
			continue
		}
		if !re.MatchString(k) {
			d.Outside++
			continue
		}
		d.Unrun = append(d.Unrun, k)
		for _, p := range ps {
			if _, ok := c[p]; ok {
				d.Policies[p].NotRunNow++
			}
		}
	}
	sort.Strings(d.Unrun)
	return d
}

// compareMatrixFigures logs figs (run now with policies ps, the cells
// -matrix-only's re selects) against the file at path (then,
// loadMatrixFigures) both ways (diffMatrixFigures): each changed cell,
// each cell of the file selected but not run now, how many the regexp
// left out, and per policy the cells in both, the geometric mean of the
// replica-minutes ratios (now / then), the summed change in miss
// percentage points and how many cells' misses rose or fell by more than
// 0.1 point. Error: no cell and policy in both (nothing was compared).
func compareMatrixFigures(t *testing.T, path string, then, figs matrixFigures, ps []string, re *regexp.Regexp) error {
	t.Helper()
	d := diffMatrixFigures(then, figs, ps, re)
	for _, c := range d.Changed {
		t.Logf("changed: %s", c)
	}
	for _, k := range d.Unrun {
		t.Logf("against %s: cell %s is in the file and selected by -matrix-only %q, not run now", path, k, re)
	}
	if d.Outside > 0 {
		t.Logf("against %s: %d cells of the file not selected by -matrix-only %q, not compared", path, d.Outside, re)
	}
	both := 0
	for _, p := range ps {
		s := d.Policies[p]
		both += s.N
		if s.N == 0 {
			t.Logf("against %s: %s: no cell in both (%d run now not in the file, %d in the file not run now)", path, p, s.NotInFile, s.NotRunNow)
			continue
		}
		t.Logf("against %s: %s: %d cells (%d changed, %d run now not in the file, %d in the file not run now), replica-minutes x%.4f (geometric mean of the ratios), misses %+.2f points summed, up > 0.1 on %d cells, down on %d",
			path, p, s.N, s.Changed, s.NotInFile, s.NotRunNow, math.Exp(s.LogRatio/float64(s.N)), s.DMiss, s.Up, s.Down)
	}
	if both == 0 {
		return fmt.Errorf("-matrix-against %s: no cell and policy both run now and in the file: nothing compared (-matrix-policies %q; -matrix-only %q; the file saved with -matrix-heldout and this run without, or the other way?)", path, strings.Join(ps, ","), re)
	}
	return nil
}

// TestMatrixFiguresFiles: the -matrix-save and -matrix-against files. A
// saved file reads back as written; a save into a directory that does not
// exist (or into a directory itself), and a missing, empty, null or non-object file to compare with, are
// errors naming the flag and the file (and, for -matrix-against, make
// heldout SAVE=FILE).
func TestMatrixFiguresFiles(t *testing.T) {
	dir := t.TempDir()
	figs := matrixFigures{"L4 + Llama-3-8B / reference seed 11": {"recommended": {0.25, 120.5}, "fixed:2": {3, 240}}}
	path := filepath.Join(dir, "before.json")
	if err := checkMatrixSave(path); err != nil {
		t.Fatal(err)
	}
	if err := saveMatrixFigures(path, figs); err != nil {
		t.Fatal(err)
	}
	got, err := loadMatrixFigures(path)
	if err != nil {
		t.Fatal(err)
	}
	if g := got["L4 + Llama-3-8B / reference seed 11"]; len(got) != 1 || g["recommended"] != [2]float64{0.25, 120.5} || g["fixed:2"] != [2]float64{3, 240} {
		t.Errorf("read back %v, want %v", got, figs)
	}
	missing := filepath.Join(dir, "no-such-dir", "before.json")
	for _, err := range []error{checkMatrixSave(missing), saveMatrixFigures(missing, figs), checkMatrixSave(filepath.Join(path, "x.json")), checkMatrixSave(dir)} {
		if err == nil || !strings.Contains(err.Error(), "-matrix-save ") || !strings.Contains(err.Error(), dir) {
			t.Errorf("save into a missing directory: %v, want an error naming -matrix-save and the path", err)
		}
	}
	for name, body := range map[string]string{"missing.json": "", "empty.json": "", "null.json": "null\n", "list.json": "[]\n", "scalar.json": `{"a / b": {"recommended": 1}}`,
		"nocells.json": "{}\n", "nofigures.json": `{"a / b": {}}`} {
		p := filepath.Join(dir, name)
		if name != "missing.json" {
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, err := loadMatrixFigures(p)
		if err == nil || !strings.Contains(err.Error(), "-matrix-against "+p) || !strings.Contains(err.Error(), "make heldout SAVE=FILE") {
			t.Errorf("%s: %v, want an error naming -matrix-against %s and make heldout SAVE=FILE", name, err, p)
		}
	}
}

// TestMatrixOnlyArgs: -matrix-only and -matrix-policies are checked
// before any replay: a regexp that does not compile and a policy that does
// not parse are errors naming the flag (not a panic, nor one error per
// cell); a valid pair gives the policies as listed.
func TestMatrixOnlyArgs(t *testing.T) {
	if _, _, err := matrixOnlyArgs("(", "recommended"); err == nil || !strings.Contains(err.Error(), `-matrix-only "("`) {
		t.Errorf("regexp (: %v, want an error naming -matrix-only", err)
	}
	if _, _, err := matrixOnlyArgs(".", "recommended,recomended"); err == nil || !strings.Contains(err.Error(), "-matrix-policies") || !strings.Contains(err.Error(), "recomended") {
		t.Errorf("policy recomended: %v, want an error naming -matrix-policies and the policy", err)
	}
	re, ps, err := matrixOnlyArgs("L4.*poisson", "recommended,fixed:2")
	if err != nil || !re.MatchString("L4 + Llama-3-8B / poisson 8 req/s 30m seed 5") || !slices.Equal(ps, []string{"recommended", "fixed:2"}) {
		t.Errorf("got %v %q %v, want a regexp matching the L4 Poisson cell and [recommended fixed:2]", re, ps, err)
	}
}

// TestMatrixAgainstBothWays: the comparison counts both ways within what
// -matrix-only selects. Worked by hand: the file has A / r1, A / r2, B / r1
// (selected by ^(A|B) /) and C / r1 (not); the run has A / r1 (replica time
// 100 -> 120), A / r2 (misses 0.5 -> 0.8) and A / r3 (not in the file).
// recommended: 2 cells in both, both changed, 1 run now not in the file, 1
// in the file not run now (B / r1), misses +0.3 points (up on 1 cell),
// replica-minutes x sqrt(1.2 x 1) = 1.0954; C / r1 is outside the regexp,
// not missing; fixed:2, not in -matrix-policies now, is not compared.
func TestMatrixAgainstBothWays(t *testing.T) {
	then := matrixFigures{
		"A / r1": {"recommended": {0, 100}, "fixed:2": {1, 200}},
		"A / r2": {"recommended": {0.5, 50}},
		"B / r1": {"recommended": {0, 80}},
		"C / r1": {"recommended": {2, 10}},
	}
	figs := matrixFigures{
		"A / r1": {"recommended": {0, 120}},
		"A / r2": {"recommended": {0.8, 50}},
		"A / r3": {"recommended": {0, 30}},
	}
	re := regexp.MustCompile("^(A|B) /")
	d := diffMatrixFigures(then, figs, []string{"recommended"}, re)
	s := d.Policies["recommended"]
	if len(d.Policies) != 1 || s == nil {
		t.Fatalf("policies %v, want recommended only", d.Policies)
	}
	if s.N != 2 || s.Changed != 2 || s.NotInFile != 1 || s.NotRunNow != 1 || s.Up != 1 || s.Down != 0 {
		t.Errorf("recommended: %+v, want 2 in both, 2 changed, 1 not in the file, 1 not run now, 1 up, 0 down", *s)
	}
	if math.Abs(s.DMiss-0.3) > 1e-12 || math.Abs(math.Exp(s.LogRatio/2)-math.Sqrt(1.2)) > 1e-12 {
		t.Errorf("misses %+.3f, ratio x%.4f; want +0.3 and x1.0954", s.DMiss, math.Exp(s.LogRatio/2))
	}
	if !slices.Equal(d.Unrun, []string{"B / r1"}) || d.Outside != 1 {
		t.Errorf("unrun %v, outside %d; want [B / r1] and 1 (C / r1)", d.Unrun, d.Outside)
	}
	want := []string{"A / r1, recommended: 0.00 / 100.0 -> 0.00 / 120.0", "A / r2, recommended: 0.50 / 50.0 -> 0.80 / 50.0"}
	if !slices.Equal(d.Changed, want) {
		t.Errorf("changed %q, want %q", d.Changed, want)
	}
	if err := compareMatrixFigures(t, "before.json", then, figs, []string{"recommended"}, re); err != nil {
		t.Errorf("compare: %v", err)
	}
	// Only fixed:2 now: no cell and policy in both, an error naming the flag and file.
	if err := compareMatrixFigures(t, "before.json", then, matrixFigures{"A / r1": {"fixed:3": {0, 1}}}, []string{"fixed:3"}, re); err == nil || !strings.Contains(err.Error(), "-matrix-against before.json") {
		t.Errorf("nothing in common: %v, want an error naming -matrix-against before.json", err)
	}
	// Before the replay: a regexp that selects none of the file's cells.
	if err := checkMatrixAgainst("before.json", then, regexp.MustCompile("^D /")); err == nil || !strings.Contains(err.Error(), "-matrix-against before.json") || !strings.Contains(err.Error(), `-matrix-only "^D /"`) {
		t.Errorf("no file cell selected: %v, want an error naming -matrix-against before.json and -matrix-only", err)
	}
	if err := checkMatrixAgainst("before.json", then, re); err != nil {
		t.Errorf("cells selected: %v", err)
	}
}

// TestParseMatrixTrace: -matrix-trace's rows are named by the file's base
// name and the scale; a bad scale, an empty spec, a missing file, a bad
// row, a trace of failed requests only or one shorter than the 15 s period
// after the scale (code.csv spans 40 s: @2 is 20 s, @4 10 s) is an error
// before any replay.
func TestParseMatrixTrace(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := write("code.csv", "arrival_s,prompt_tokens,output_tokens\n0,100,10\n40,200,20\n")
	bad := write("bad.csv", "arrival_s,prompt_tokens,output_tokens\n0,100,10\n40,x,20\n")
	failed := write("failed.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,ChatGPT,0,0,0,Conversation log\n")
	for _, c := range []struct {
		in, name string
		scale    float64
	}{
		{f, "code.csv", 0},
		{f + "@2", "code.csv 2x", 2},
		{f + "@0.5", "code.csv 0.5x", 0.5},
		{"synthetic:onoff,gap=60s", "synthetic:onoff,gap=60s", 0},
	} {
		tr, err := parseMatrixTrace(c.in)
		if err != nil || tr.name != c.name || tr.opts.RateScale != c.scale {
			t.Errorf("%q: %+v, %v; want %q at %g", c.in, tr, err, c.name, c.scale)
		}
	}
	for _, c := range []struct{ in, want string }{
		{f + "@0", "rate scale after @"},
		{f + "@-1", "rate scale after @"},
		{f + "@x", "rate scale after @"},
		{"@2", "want a trace"},
		{filepath.Join(dir, "missing.csv"), "missing.csv"},
		{bad, "bad.csv:3"},
		{failed, "trace has no requests"},
		{f + "@4", "spans 10 s (after the rate scale), less than the matrix's 15 s period"},
	} {
		if _, err := parseMatrixTrace(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error naming %q", c.in, err, c.want)
		}
	}
	// Two files of one base name (or one file twice) would be two rows of
	// one name, one of which -matrix-save keeps; at another scale they are
	// two rows.
	other := filepath.Join(t.TempDir(), "code.csv")
	if err := os.WriteFile(other, []byte("arrival_s,prompt_tokens,output_tokens\n0,100,10\n60,200,20\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err1 := parseMatrixTrace(f)
	b, err2 := parseMatrixTrace(other)
	c, err3 := parseMatrixTrace(other + "@2")
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	if err := checkMatrixTraceName([]matrixTrace{a}, b); err == nil || !strings.Contains(err.Error(), `both rows named "code.csv"`) {
		t.Errorf("same base name: %v, want an error naming the row code.csv", err)
	}
	if err := checkMatrixTraceName([]matrixTrace{a}, c); err != nil {
		t.Errorf("code.csv and code.csv@2: %v, want two rows", err)
	}
}
