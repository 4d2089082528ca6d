package tune

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func pct(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) + "%" }

// WriteText writes the winner, the finalists with their in-sample and
// out-of-sample figures side by side, the frontier and the serve block.
func (r Report) WriteText(w io.Writer, traceName string) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "tune %s: in-sample [0, %.0fs), held out [%.0fs, %.0fs); budget %s misses; screened on %s; %d replays\n\n",
		traceName, r.Split, r.Split, r.Duration, pct(r.MaxMissPct), r.Screened, r.Replays)
	verdict := "holds in sample, out of sample and on every stressed copy"
	if !r.Holds {
		verdict = "NO candidate held everywhere; this one has the lowest worst miss %"
	}
	fmt.Fprintf(b, "winner: %s (%s)\n\n", r.Policy, verdict)
	width := len("policy")
	for _, f := range r.Finalists {
		width = max(width, len(f.Policy))
	}
	fmt.Fprintf(b, "%-*s  %12s %12s  %12s %12s", width, "finalists", "in miss %", "in rep-min", "out miss %", "out rep-min")
	for _, n := range r.StressNames {
		fmt.Fprintf(b, "  %12s", n+" miss %")
	}
	b.WriteString("  holds\n")
	for _, f := range r.Finalists {
		fmt.Fprintf(b, "%-*s  %12s %12.1f  %12s %12.1f", width, f.Policy, pct(f.InSample.MissPct), f.InSample.ReplicaMinutes,
			pct(f.OutOfSample.MissPct), f.OutOfSample.ReplicaMinutes)
		for _, s := range f.Stress {
			fmt.Fprintf(b, "  %12s", pct(s.MissPct))
		}
		fmt.Fprintf(b, "  %v\n", f.Holds)
	}
	if len(r.Baselines) > 0 {
		width = len("baselines")
		for _, bl := range r.Baselines {
			width = max(width, len(bl.Policy))
		}
		fmt.Fprintf(b, "\n%-*s  %12s %12s  %12s %12s\n", width, "baselines", "in miss %", "in rep-min", "out miss %", "out rep-min")
		for _, bl := range r.Baselines {
			fmt.Fprintf(b, "%-*s  %12s %12.1f  %12s %12.1f\n", width, bl.Policy, pct(bl.InSample.MissPct), bl.InSample.ReplicaMinutes,
				pct(bl.OutOfSample.MissPct), bl.OutOfSample.ReplicaMinutes)
		}
	}
	fmt.Fprintf(b, "\nfrontier (screening sample: no row has a lower worst miss %% over the sample and its stressed copies at no more replica time)\n")
	width = len("policy")
	for _, f := range r.Frontier {
		width = max(width, len(f.Policy))
	}
	fmt.Fprintf(b, "%-*s  %10s %12s %18s\n", width, "policy", "miss %", "replica-min", "worst stressed %")
	for _, f := range r.Frontier {
		fmt.Fprintf(b, "%-*s  %10s %12.1f %18s\n", width, f.Policy, pct(f.Screen.MissPct), f.Screen.ReplicaMinutes, pct(f.screenWorst()))
	}
	fmt.Fprintf(b, "\nserve config (a whole file for serve --config; check max against the Deployment's quota):\n\n%s", r.Target)
	_, err := io.WriteString(w, b.String())
	return err
}

// Plot draws every screened row as miss % against replica-minutes (on the
// sample, and the worst of the sample and its stressed copies), the
// frontier of the worst as a line, the budget dashed and the winner
// marked; format is "png" or "svg".
func (r Report) Plot(w io.Writer, format string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("tune: screened policies (budget %s misses)", pct(r.MaxMissPct))
	p.X.Label.Text = "replica-minutes (screening sample)"
	p.Y.Label.Text = "SLO misses (%)"
	var all, stressed, front, win plotter.XYs
	for _, row := range r.Rows {
		all = append(all, plotter.XY{X: row.Screen.ReplicaMinutes, Y: row.Screen.MissPct})
		xy := plotter.XY{X: row.Screen.ReplicaMinutes, Y: row.screenWorst()}
		stressed = append(stressed, xy)
		if row.Frontier {
			front = append(front, xy)
		}
		if row.Policy == r.Policy {
			win = append(win, xy)
		}
	}
	slices.SortFunc(front, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
	sc, err := plotter.NewScatter(all)
	if err != nil {
		return err
	}
	sc.GlyphStyle.Radius = vg.Points(2)
	p.Add(sc)
	p.Legend.Add("screened: the sample", sc)
	ss, err := plotter.NewScatter(stressed)
	if err != nil {
		return err
	}
	ss.GlyphStyle.Shape = draw.TriangleGlyph{}
	ss.GlyphStyle.Radius = vg.Points(2)
	ss.GlyphStyle.Color = plotutil.Color(3)
	p.Add(ss)
	p.Legend.Add("screened: worst of the sample and its stressed copies", ss)
	if len(front) > 0 {
		l, err := plotter.NewLine(front)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(1)
		p.Add(l)
		p.Legend.Add("frontier (worst)", l)
	}
	if len(win) > 0 {
		ws, err := plotter.NewScatter(win)
		if err != nil {
			return err
		}
		ws.GlyphStyle.Shape = draw.CrossGlyph{}
		ws.GlyphStyle.Radius = vg.Points(6)
		ws.GlyphStyle.Color = plotutil.Color(2)
		p.Add(ws)
		p.Legend.Add("winner "+r.Policy, ws)
	}
	budget := plotter.NewFunction(func(float64) float64 { return r.MaxMissPct })
	budget.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(budget)
	p.Legend.Add("budget", budget)
	p.Legend.Top = true
	p.Y.Min = 0
	p.Y.Max = math.Max(p.Y.Max, 2*r.MaxMissPct)
	if format != "png" && format != "svg" {
		return fmt.Errorf("plot format %q: want png or svg", format)
	}
	wt, err := p.WriterTo(8*vg.Inch, 5*vg.Inch, format)
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
}
