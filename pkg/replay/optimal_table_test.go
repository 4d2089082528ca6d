package replay

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/trace"
)

var updateOptimal = flag.Bool("update", false, "rerun the trace variants and rewrite docs/simulate.md's table of optimal against oracle and recommended")

const (
	optimalBegin = "<!-- BEGIN OPTIMAL TABLE: go test ./pkg/replay -run TestOptimalTable -update -->"
	optimalEnd   = "<!-- END OPTIMAL TABLE -->"
)

// TestOptimalTable replays the trace variants under oracle,
// optimal and recommended, checks that optimal never misses more than the
// oracle nor costs more at the same misses, and with -update rewrites the
// table in docs/simulate.md. Without -update it replays two rows
// (reference seed 1 at 1x and 2x, each under a second) and checks the
// table holds their figures, so that a change to a policy, the replay or
// the bound cannot leave the table stale. The Azure and Mooncake rows need
// the shared traces beside the repository and are left out without them.
func TestOptimalTable(t *testing.T) {
	type variant struct {
		name string
		src  func() (trace.Source, error)
	}
	parse := func(spec string, k float64) func() (trace.Source, error) {
		return func() (trace.Source, error) {
			src, err := trace.ParseContext(context.Background(), spec, trace.Options{Seed: 1, RateScale: k})
			if err != nil || spec == "reference" || strings.HasPrefix(spec, "synthetic:") {
				return src, err
			}
			_, last, err := trace.Check(context.Background(), src)
			src.Duration = last
			return src, err
		}
	}
	var vs []variant
	for _, k := range []float64{1, 2} {
		for seed := uint64(1); seed <= 10; seed++ {
			vs = append(vs, variant{fmt.Sprintf("reference seed %d x%g", seed, k), func() (trace.Source, error) {
				return trace.RateScale(trace.Reference(seed), k), nil
			}})
		}
	}
	shared := filepath.Join("..", "..", "..", "shared", "testdata", "traces")
	if _, err := os.Stat(shared); err == nil {
		for _, k := range []float64{1, 3, 6} {
			vs = append(vs, variant{fmt.Sprintf("azure-llm-2023-conv x%g", k), parse(filepath.Join(shared, "azure-llm-2023-conv.csv"), k)})
		}
		vs = append(vs, variant{"mooncake-synthetic", parse(filepath.Join(shared, "mooncake-synthetic.jsonl"), 1)})
	}
	vs = append(vs, variant{"synthetic:step (3 -> 25 -> 3 req/s)", parse("synthetic:step", 1)},
		variant{"synthetic:diurnal (a day, 3 to 30 req/s)", parse("synthetic:diurnal", 1)})
	if !*updateOptimal {
		vs = []variant{vs[0], vs[10]} // reference seed 1 x1, x2
	}
	model := referenceModel(t)
	var (
		b      strings.Builder
		checks []string // each row, the run time left blank
	)
	b.WriteString(optimalBegin + "\n\n")
	b.WriteString("| trace | oracle misses | oracle replica-min | optimal misses | optimal replica-min | lower bound misses | lower bound replica-min | optimal / bound | optimal / oracle | optimal run (s) | recommended misses | recommended replica-min | recommended / optimal |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, v := range vs {
		src, err := v.src()
		if err != nil {
			t.Fatal(err)
		}
		pols := make([]Policy, 3)
		for i, s := range []string{"oracle", "optimal", "recommended"} {
			if pols[i], err = ParsePolicy(s); err != nil {
				t.Fatal(err)
			}
		}
		cfg := Config{Model: model}
		var res [3]Result
		start := time.Now()
		if res[1], err = Run(context.Background(), src, pols[1], cfg); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start).Seconds()
		for _, i := range []int{0, 2} {
			if res[i], err = Run(context.Background(), src, pols[i], cfg); err != nil {
				t.Fatal(err)
			}
		}
		o, p, r := res[0], res[1], res[2]
		if p.Misses() > o.Misses() || (p.Misses() == o.Misses() && p.ReplicaSeconds > o.ReplicaSeconds+1e-6) {
			t.Errorf("%s: optimal %d misses at %.1f replica-min, oracle %d at %.1f: want optimal no worse", v.name, p.Misses(), p.ReplicaMinutes(), o.Misses(), o.ReplicaMinutes())
		}
		ratio := func(a, b float64) string {
			if b == 0 || math.IsNaN(a/b) {
				return "-"
			}
			return fmt.Sprintf("%.2f", a/b)
		}
		lb := p.LowerBound
		if lb == nil {
			t.Fatalf("%s: optimal without a lower bound", v.name)
		}
		if p.Misses() == lb.Unmeetable && p.ReplicaSeconds < lb.ReplicaSeconds-1e-6 {
			t.Errorf("%s: optimal %.1f replica-min below its certified bound %.1f", v.name, p.ReplicaMinutes(), lb.ReplicaSeconds/60)
		}
		row := func(took string) string {
			return fmt.Sprintf("| %s | %d (%.2f%%) | %.1f | %d (%.2f%%) | %.1f | %d | %.1f | %s | %s | %s | %d (%.2f%%) | %.1f | %s |", v.name,
				o.Misses(), o.MissPct(), o.ReplicaMinutes(), p.Misses(), p.MissPct(), p.ReplicaMinutes(), lb.Unmeetable, lb.ReplicaSeconds/60, ratio(p.ReplicaSeconds, lb.ReplicaSeconds),
				ratio(p.ReplicaSeconds, o.ReplicaSeconds), took, r.Misses(), r.MissPct(), r.ReplicaMinutes(), ratio(r.ReplicaSeconds, p.ReplicaSeconds))
		}
		b.WriteString(row(fmt.Sprintf("%.1f", took)) + "\n")
		checks = append(checks, row(""))
	}
	b.WriteString("\n" + optimalEnd)
	path := filepath.Join("..", "..", "docs", "simulate.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, optimalBegin), strings.Index(s, optimalEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/simulate.md lacks the markers %q ... %q", optimalBegin, optimalEnd)
	}
	if !*updateOptimal {
		// The run time (the tenth column) is wall time: not compared.
		table := map[string]string{}
		for _, l := range strings.Split(s[i:j], "\n") {
			if f := strings.Split(l, " | "); len(f) == 13 {
				f[9] = ""
				table[strings.TrimPrefix(f[0], "| ")] = strings.Join(f, " | ")
			}
		}
		for k, want := range checks {
			name := vs[k].name
			if got := table[name]; got != want {
				t.Errorf("docs/simulate.md's optimal table, row %q:\n got %s\nwant %s\n(regenerate: go test ./pkg/replay -run TestOptimalTable -update)", name, got, want)
			}
		}
		return
	}
	if err := os.WriteFile(path, []byte(s[:i]+b.String()+s[j+len(optimalEnd):]), 0o644); err != nil {
		t.Fatal(err)
	}
}
