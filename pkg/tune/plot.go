package tune

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/infscale/infscale/pkg/replay"
)

// Plot draws every screened row as SLO misses against replica-minutes (on
// the sample, and the worst of the sample and its stressed copies), the
// frontier of the worst as a line, the budget as a labelled dashed line
// and the winner as a bold labelled ring; the legend sits below the
// data. Misses are on a symmetric log axis (linear up to a tenth of the
// budget, log above; missMap), so a 0.1% budget stands clear of 0 beside
// rows missing 90%. format is "png" or "svg".
func (r Report) Plot(w io.Writer, format string) error {
	cw, err := replay.Canvas(format, 24*vg.Centimeter, 17*vg.Centimeter)
	if err != nil {
		return err
	}
	p, legend, err := r.plot()
	if err != nil {
		return err
	}
	dc := draw.New(cw)
	lh := legendHeight(legend) + 4*vg.Millimeter
	p.Draw(draw.Crop(dc, vg.Millimeter, -2*vg.Millimeter, lh, -2*vg.Millimeter))
	lc := draw.Crop(dc, 12*vg.Millimeter, 0, 2*vg.Millimeter, 0)
	lc.Max.Y = lc.Min.Y + lh - 2*vg.Millimeter
	legend.Draw(lc)
	_, err = cw.WriteTo(w)
	return err
}

// Plot's colours: the winner and the budget in red, the frontier in green,
// the stressed rows in orange, the sample's in grey.
var (
	winnerRed    = color.NRGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255}
	frontierCol  = color.NRGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 255}
	stressedCol  = color.NRGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 255}
	sampleColour = color.NRGBA{R: 0x55, G: 0x55, B: 0x55, A: 255}
)

// plot builds Plot's data area and its legend.
func (r Report) plot() (*plot.Plot, plot.Legend, error) {
	m := newMissMap(r.MaxMissPct)
	p := plot.New()
	p.Title.Text = fmt.Sprintf("tune: screened policies (budget %s misses)", pct(r.MaxMissPct))
	p.X.Label.Text = "replica-minutes (screening sample)"
	if r.pair {
		p.X.Label.Text = "replica-minutes of both pools (screening sample)"
	}
	p.Y.Label.Text = fmt.Sprintf("SLO misses (%% of requests; log above %g%%)", m.lin)
	p.Y.Tick.Marker = m
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.ThumbnailWidth = vg.Points(30)
	legend.TextStyle.Font.Size = vg.Points(11)
	legend.Padding = vg.Points(4) // the winner's ring is taller than a line

	var all, stressed, front, win plotter.XYs
	top := 2 * r.MaxMissPct
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, row := range r.Rows {
		xmin, xmax = math.Min(xmin, row.Screen.ReplicaMinutes), math.Max(xmax, row.Screen.ReplicaMinutes)
		worst := row.screenWorst()
		top = max(top, worst)
		all = append(all, plotter.XY{X: row.Screen.ReplicaMinutes, Y: m.at(row.Screen.MissPct)})
		xy := plotter.XY{X: row.Screen.ReplicaMinutes, Y: m.at(worst)}
		stressed = append(stressed, xy)
		if row.Frontier {
			front = append(front, xy)
		}
		if row.Policy == r.Policy {
			win = append(win, xy)
		}
	}
	slices.SortFunc(front, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
	if len(all) > 0 {
		sc, err := plotter.NewScatter(all)
		if err != nil {
			return nil, legend, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: sampleColour, Radius: vg.Points(2.2), Shape: draw.RingGlyph{}}
		p.Add(sc)
		legend.Add("screened: misses on the sample", sc)
		ss, err := plotter.NewScatter(stressed)
		if err != nil {
			return nil, legend, err
		}
		ss.GlyphStyle = draw.GlyphStyle{Color: stressedCol, Radius: vg.Points(2.2), Shape: draw.TriangleGlyph{}}
		p.Add(ss)
		legend.Add("screened: worst of the sample and its stressed copies", ss)
	}
	if len(front) > 0 {
		l, err := plotter.NewLine(front)
		if err != nil {
			return nil, legend, err
		}
		l.Color, l.Width = frontierCol, vg.Points(1.5)
		p.Add(l)
		legend.Add("frontier of the worst", l)
	}
	budget := plotter.NewFunction(func(float64) float64 { return m.at(r.MaxMissPct) })
	budget.Color, budget.Width = winnerRed, vg.Points(1.2)
	budget.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	p.Add(budget)
	legend.Add("budget "+pct(r.MaxMissPct), budget)
	if len(win) > 0 {
		ws, err := plotter.NewScatter(win)
		if err != nil {
			return nil, legend, err
		}
		ws.GlyphStyle = draw.GlyphStyle{Color: winnerRed, Radius: vg.Points(7), Shape: boldRing{width: vg.Points(2.5)}}
		p.Add(ws)
		legend.Add("winner: "+r.Policy, ws)
	}
	p.Y.Min, p.Y.Max = 0, m.at(top*1.3)
	// Labels on the data: the budget's at the left end above its line, the
	// winner's beside its ring (left of it in the right half).
	if len(all) == 0 {
		xmin, xmax = 0, 1
	}
	pad := (xmax - xmin) * 0.03 // no marker cut in half at an edge
	p.X.Min, p.X.Max = xmin-pad, xmax+pad
	if err := addLabel(p, plotter.XY{X: xmin, Y: m.at(r.MaxMissPct)}, "budget "+pct(r.MaxMissPct), winnerRed, false, (xmin+xmax)/2); err != nil {
		return nil, legend, err
	}
	if len(win) > 0 {
		if err := addLabel(p, win[0], "winner", winnerRed, true, (xmin+xmax)/2); err != nil {
			return nil, legend, err
		}
	}
	p.Add(plotter.NewGrid())
	return p, legend, nil
}

// addLabel puts text at xy in bold colour c: above the point, or beside
// it (beside, for a marker) on the side that keeps it inside the data area
// (xmid the middle of the x axis).
func addLabel(p *plot.Plot, xy plotter.XY, text string, c color.Color, beside bool, xmid float64) error {
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{xy}, Labels: []string{text}})
	if err != nil {
		return err
	}
	sty := &l.TextStyle[0]
	sty.Color = c
	sty.Font.Size = vg.Points(11)
	sty.Font.Variant = "Sans"
	sty.Font.Weight = xfont.WeightBold
	l.Offset = vg.Point{X: vg.Points(2), Y: vg.Points(3)}
	if beside {
		l.Offset = vg.Point{X: vg.Points(10), Y: vg.Points(-4)}
		if xy.X > xmid {
			sty.XAlign = draw.XRight
			l.Offset.X = -l.Offset.X
		}
	}
	p.Add(l)
	return nil
}

// boldRing is a ring glyph drawn with a line of width (draw.RingGlyph's is
// 0.5 pt, faint at any radius).
type boldRing struct{ width vg.Length }

// DrawGlyph implements draw.GlyphDrawer.
func (g boldRing) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: g.width})
	var p vg.Path
	p.Move(vg.Point{X: pt.X + sty.Radius, Y: pt.Y})
	p.Arc(pt, sty.Radius, 0, 2*math.Pi)
	p.Close()
	c.Stroke(p)
}

// legendHeight is the height of the legend's entries.
func legendHeight(l plot.Legend) vg.Length {
	r := l.Rectangle(draw.New(vgimg.New(vg.Points(1000), vg.Points(1000))))
	return r.Max.Y - r.Min.Y
}

// missMap maps a miss percentage to its axis position: linear up to lin
// (a tenth of the budget), log10 above, continuous at lin:
// log10(1 + y/lin), so 0 is 0, lin is 0.30 and 10 x lin 1.04. It is also
// the axis's plot.Ticker, labelling 0 and each power of ten from lin on.
type missMap struct{ lin float64 }

func newMissMap(budget float64) missMap {
	if !(budget > 0) {
		budget = 0.1
	}
	return missMap{lin: math.Pow(10, math.Floor(math.Log10(budget/10)+1e-9))}
}

func (m missMap) at(y float64) float64 { return math.Log10(1 + math.Max(y, 0)/m.lin) }

func (m missMap) inverse(v float64) float64 { return (math.Pow(10, v) - 1) * m.lin }

// Ticks implements plot.Ticker on the mapped axis.
func (m missMap) Ticks(lo, hi float64) []plot.Tick {
	ticks := []plot.Tick{{Value: 0, Label: "0"}}
	top := m.inverse(hi)
	for dec := m.lin; dec <= top; dec *= 10 {
		for k := 1; k <= 9; k++ {
			y := dec * float64(k)
			if y > top {
				break
			}
			label := ""
			if k == 1 {
				label = strconv.FormatFloat(y, 'g', 3, 64)
			}
			ticks = append(ticks, plot.Tick{Value: m.at(y), Label: label})
		}
	}
	return ticks
}

// Plot draws a pair's screened rows as Report.Plot draws one pool's: SLO
// misses of the pair's requests against both pools' replica-minutes, the
// frontier, the budget and the winner; the floor round's probes (finalists
// not in Rows, the grid) are drawn with the grid, as Report's are. format
// is "png" or "svg".
func (r PDReport) Plot(w io.Writer, format string) error {
	rows := slices.Clone(r.Rows)
	for _, f := range r.Finalists {
		if !slices.ContainsFunc(rows, func(x Row) bool { return x.Policy == f.Policy }) {
			rows = append(rows, f)
		}
	}
	return Report{Policy: r.Policy, Outcome: r.Outcome, Rows: rows, pair: true}.Plot(w, format)
}
