package tune

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/infscale/infscale/internal/svgtest"
)

// plotDir keeps the plot TestPlotReadable renders, to look at it.
var plotDir = flag.String("plot-dir", "", "write the plot TestPlotReadable renders to this directory (tune.png, tune.svg) instead of a temporary one")

// TestPlotReadable renders a tune report of 60 screened rows (misses 0 to
// 90%, a 0.1% budget) and checks what makes it readable: every text inside
// the canvas at 0.6 em a character (the legend too), the budget and the
// winner labelled on the data, the winner's ring drawn 2.5 pt wide, and
// the misses axis labelled at 0, 0.01, 0.1, 1 and 10 (%).
func TestPlotReadable(t *testing.T) {
	r := Report{Policy: "queue:16,min=2,lookahead=137,downwindow=91", Outcome: Outcome{MaxMissPct: 0.1}}
	for i := range 60 {
		miss := []float64{0, 0, 0.05, 2, 16, 90}[i%6]
		row := Row{Policy: fmt.Sprintf("policy-%d", i), Screen: Figures{MissPct: miss, ReplicaMinutes: 25 + float64(i)*2.3},
			ScreenStress: []Figures{{MissPct: math.Min(90, miss*1.5+float64(i%4))}}}
		row.Frontier = i%10 == 0
		r.Rows = append(r.Rows, row)
	}
	r.Rows[44].Policy = r.Policy
	dir := *plotDir
	if dir == "" {
		dir = t.TempDir()
	}
	for _, format := range []string{"png", "svg"} {
		var b bytes.Buffer
		if err := r.Plot(&b, format); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tune."+format), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, "tune.svg"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := svgtest.Parse(string(svg))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range doc.Outside(0.6) {
		t.Errorf("text %q at (%.0f, %.0f) ends at x %.0f: outside the canvas %.0f x %.0f", x.Body, x.X, x.Y, x.Right(0.6), doc.W, doc.H)
	}
	for _, want := range []string{"budget 0.10%", "winner", "winner: " + r.Policy} {
		if _, ok := doc.Find(want); !ok {
			t.Errorf("no text %q", want)
		}
	}
	if !slices.ContainsFunc(doc.Strokes, func(s string) bool { return strings.Contains(s, "#D62728") && strings.Contains(s, "stroke-width:2.5") }) {
		t.Error("no 2.5 pt red stroke (the winner's ring)")
	}
	var ticks []string
	for _, tx := range doc.Texts {
		if tx.X < 60 && !tx.Rotated {
			ticks = append(ticks, tx.Body)
		}
	}
	for _, want := range []string{"0", "0.01", "0.1", "1", "10"} {
		if !slices.Contains(ticks, want) {
			t.Errorf("misses axis lacks the tick %q (left texts %q)", want, ticks)
		}
	}
}

// TestMissMap: a 0.1% budget maps linearly below 0.01% and log10 above:
// 0 -> 0, 0.01 -> log10(2) = 0.301, 0.1 -> log10(11) = 1.041, 90 ->
// log10(9001) = 3.954, so the budget sits over a quarter of the way up an
// axis ending at 90% (1.041 / 3.954 = 0.263), where on a linear one it was
// at 0.1 / 90 = 0.1%.
func TestMissMap(t *testing.T) {
	m := newMissMap(0.1)
	for _, c := range []struct{ y, want float64 }{{0, 0}, {0.01, 0.30103}, {0.1, 1.04139}, {90, 3.95429}} {
		if got := m.at(c.y); math.Abs(got-c.want) > 1e-4 {
			t.Errorf("at(%g) = %.5f, want %.5f", c.y, got, c.want)
		}
	}
	if f := m.at(0.1) / m.at(90); f < 0.25 {
		t.Errorf("budget at %.3f of the axis, want >= 0.25", f)
	}
	if m := newMissMap(2); m.lin != 0.1 {
		t.Errorf("a 2%% budget: linear to %g, want 0.1", m.lin)
	}
}

// TestPDPlot: a pair's report drawn as one pool's, its x axis both
// pools' replica-minutes and the winner named in the legend.
func TestPDPlot(t *testing.T) {
	r := PDReport{Policy: "recommended(prefill=0.5,decode=0.7)", Outcome: Outcome{MaxMissPct: 0.1}}
	for i, tp := range []float64{0.3, 0.5, 0.7} {
		r.Rows = append(r.Rows, Row{Policy: pdCandidate{tp: tp, td: 0.7}.Policy(), Screen: Figures{ReplicaMinutes: 100 + 10*float64(i)}, Frontier: i == 0})
	}
	var b bytes.Buffer
	if err := r.Plot(&b, "svg"); err != nil {
		t.Fatal(err)
	}
	doc, err := svgtest.Parse(b.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"replica-minutes of both pools (screening sample)", "winner: recommended(prefill=0.5,decode=0.7)"} {
		if _, ok := doc.Find(want); !ok {
			t.Errorf("plot lacks %q", want)
		}
	}
	for _, x := range doc.Outside(0.6) {
		t.Errorf("text %q ends outside the canvas", x.Body)
	}
}

// TestPDPlotFloorWinner: a winner of the floor round is a finalist, not a
// grid row (Rows), and is drawn and named as the winner all the same.
func TestPDPlotFloorWinner(t *testing.T) {
	w := pdCandidate{tp: 0.8, td: 0.9, minD: 2}.Policy()
	r := PDReport{Policy: w, Outcome: Outcome{MaxMissPct: 0.1, Holds: true},
		Rows:      []Row{{Policy: pdCandidate{tp: 0.8, td: 0.9}.Policy(), Screen: Figures{ReplicaMinutes: 48, MissPct: 0}, ScreenStress: []Figures{{MissPct: 23}}, Frontier: true}},
		Finalists: []Row{{Policy: w, Screen: Figures{ReplicaMinutes: 57.5}}}}
	var b bytes.Buffer
	if err := r.Plot(&b, "svg"); err != nil {
		t.Fatal(err)
	}
	doc, err := svgtest.Parse(b.String())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Find("winner: " + w); !ok {
		t.Errorf("plot lacks the floor round's winner %q", w)
	}
}
