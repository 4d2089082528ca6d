package replay

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
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
)

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
	return then, nil
}

// compareMatrixFigures logs the cells of figs whose figures differ from
// those saved at path, and per policy the cells both hold, the geometric
// mean of the replica-minutes ratios (now / then), the summed change in
// miss percentage points and how many cells' misses rose or fell by more
// than 0.1 point; then is the file's figures (loadMatrixFigures).
func compareMatrixFigures(t *testing.T, path string, then, figs matrixFigures) {
	t.Helper()
	type sum struct {
		n, up, down   int
		logRatio, dm  float64
		changed, gone int
	}
	sums := map[string]*sum{}
	var keys []string
	for k := range figs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for p, now := range figs[k] {
			s := sums[p]
			if s == nil {
				s = &sum{}
				sums[p] = s
			}
			old, ok := then[k][p]
			if !ok {
				s.gone++
				continue
			}
			s.n++
			if old[1] > 0 && now[1] > 0 {
				s.logRatio += math.Log(now[1] / old[1])
			}
			s.dm += now[0] - old[0]
			switch d := now[0] - old[0]; {
			case d > 0.1:
				s.up++
			case d < -0.1:
				s.down++
			}
			if now != old {
				s.changed++
				t.Logf("changed: %s, %s: %.2f / %.1f -> %.2f / %.1f", k, p, old[0], old[1], now[0], now[1])
			}
		}
	}
	var ps []string
	for p := range sums {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	for _, p := range ps {
		s := sums[p]
		if s.n == 0 {
			t.Logf("against %s: %s: no cell in both", path, p)
			continue
		}
		t.Logf("against %s: %s: %d cells (%d changed, %d not in the file), replica-minutes x%.4f (geometric mean of the ratios), misses %+.2f points summed, up > 0.1 on %d cells, down on %d",
			path, p, s.n, s.changed, s.gone, math.Exp(s.logRatio/float64(s.n)), s.dm, s.up, s.down)
	}
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
	for name, body := range map[string]string{"missing.json": "", "empty.json": "", "null.json": "null\n", "list.json": "[]\n", "scalar.json": `{"a / b": {"recommended": 1}}`} {
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
