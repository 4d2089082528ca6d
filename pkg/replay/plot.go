package replay

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot draws three aligned panels over the trace's time, from the results'
// timelines (run with Config.Timeline): the load (arrivals per second), the
// replicas each policy asked for, and each policy's TTFT p95 per period on a
// log scale (see PlotAt). Time is relative: seconds, hours (traces over
// 3 h) or days (over 3 days). format is "png" or "svg".
func Plot(w io.Writer, format string, results []Result, slo float64) error {
	return PlotAt(w, format, results, slo, time.Time{})
}

// plotBins is how many time bins the TTFT panel summarises a timeline into.
const plotBins = 96

// PlotAt is Plot with the time axis in dates when start (the time of the
// timelines' t = 0) is not zero, as a backtest of real history has it.
//
// The policies' legend sits right of the panels, outside the data; up to 12
// policies get distinct colours, and neighbours distinct dashes too. The
// replicas axis ends at the 99th percentile of all asked-for values (times
// 1.15), so that one spike does not flatten the rest; the label then says
// where the peak was cut. TTFT is shown as quantile bands: per policy and
// per time bin (plotBins over the span), the median of the periods' p95
// as a line and their 10th-90th percentiles as a translucent band, with the
// SLO as a dashed black line.
func PlotAt(w io.Writer, format string, results []Result, slo float64, start time.Time) error {
	if len(results) == 0 || len(results[0].Timeline) == 0 {
		return errors.New("plot: no timeline (run with Config.Timeline)")
	}
	tl0 := results[0].Timeline
	span := tl0[len(tl0)-1].T
	x := func(t float64) float64 { return t } // seconds since start, or unix seconds
	unit := "s"
	load, reps, ttft := plot.New(), plot.New(), plot.New()
	switch {
	case !start.IsZero():
		base := float64(start.Unix())
		x = func(t float64) float64 { return base + t }
		for _, p := range []*plot.Plot{load, reps, ttft} {
			p.X.Tick.Marker = dateTicks{loc: start.Location()}
		}
		unit = start.Location().String()
	case span > 3*86400:
		x, unit = func(t float64) float64 { return t / 86400 }, "days"
	case span > 3*3600:
		x, unit = func(t float64) float64 { return t / 3600 }, "h"
	}
	load.Title.Text = "load: " + results[0].Trace
	load.Y.Label.Text = "arrivals/s"
	ttft.Title.Text = "TTFT p95 per period: median (line) and 10-90% (band) per time bin"
	ttft.Y.Label.Text = fmt.Sprintf("TTFT p95 (s); dashed: SLO %gs", slo)
	ttft.X.Label.Text = "time (" + unit + ")"
	ttft.Y.Scale = plot.LogScale{}
	ttft.Y.Tick.Marker = plot.LogTicks{Prec: -1}

	var arr plotter.XYs
	for _, s := range tl0 {
		arr = append(arr, plotter.XY{X: x(s.T), Y: s.ArrivalRate})
	}
	al, err := plotter.NewLine(arr)
	if err != nil {
		return err
	}
	al.Color = color.Gray{Y: 60}
	load.Add(al)

	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	var desired []float64
	peak := 1
	lo, hi := slo, slo
	for i, r := range results {
		c, dashes := plotColor(i), plotDashes(i)
		var rp plotter.XYs
		for _, s := range r.Timeline {
			rp = append(rp, plotter.XY{X: x(s.T), Y: float64(s.Desired)})
			desired = append(desired, float64(s.Desired))
			peak = max(peak, s.Desired)
		}
		l, err := plotter.NewLine(rp)
		if err != nil {
			return err
		}
		l.Color, l.Dashes, l.Width = c, dashes, vg.Points(1.2)
		reps.Add(l)
		legend.Add(r.Policy, l)

		med, band := ttftBands(r.Timeline, span, x)
		for _, seg := range band {
			poly, err := plotter.NewPolygon(seg)
			if err != nil {
				return err
			}
			poly.Color = color.NRGBA{R: c.R, G: c.G, B: c.B, A: 40}
			poly.LineStyle.Width = 0
			ttft.Add(poly)
			for _, p := range seg {
				lo, hi = math.Min(lo, p.Y), math.Max(hi, p.Y)
			}
		}
		for _, seg := range splitRuns(med) {
			ml, err := plotter.NewLine(seg)
			if err != nil {
				return err
			}
			ml.Color, ml.Dashes, ml.Width = c, dashes, vg.Points(1.2)
			ttft.Add(ml)
		}
	}
	sloLine, err := plotter.NewLine(plotter.XYs{{X: x(0), Y: slo}, {X: x(span), Y: slo}})
	if err != nil {
		return err
	}
	sloLine.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	ttft.Add(sloLine)
	ttft.Y.Min, ttft.Y.Max = lo/1.5, hi*1.5

	top := replicasAxisMax(desired, peak)
	reps.Y.Min, reps.Y.Max = 0, top
	reps.Y.Label.Text = "replicas asked for"
	if top < float64(peak) {
		reps.Y.Label.Text = fmt.Sprintf("replicas asked for (cut at %.0f; peak %d)", top, peak)
	}
	for _, p := range []*plot.Plot{load, reps, ttft} {
		p.X.Min, p.X.Max = x(0), x(span)
		p.Add(plotter.NewGrid())
	}

	width, height := 32*vg.Centimeter, 30*vg.Centimeter
	var cw vg.CanvasWriterTo
	switch format {
	case "png":
		cw = vgimg.PngCanvas{Canvas: vgimg.New(width, height)}
	case "svg":
		cw = vgsvg.New(width, height)
	default:
		return fmt.Errorf("plot format %q: want png or svg", format)
	}
	dc := draw.New(cw)
	// The legend's column: as wide as its longest entry, at most a third.
	lw := min(legendWidth(legend, dc)+6*vg.Millimeter, width/3)
	panels := draw.Crop(dc, 0, -lw, 0, 0)
	plots := [][]*plot.Plot{{load}, {reps}, {ttft}}
	tiles := draw.Tiles{Rows: 3, Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter, PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	canvases := plot.Align(plots, tiles, panels)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	// Level with the replicas panel, right of every panel.
	lc := draw.Crop(dc, width-lw, 0, 0, 0)
	lc.Max.Y = canvases[1][0].Max.Y
	legend.Draw(lc)
	_, err = cw.WriteTo(w)
	return err
}

// legendWidth is the width the legend's entries need.
func legendWidth(l plot.Legend, c draw.Canvas) vg.Length {
	r := l.Rectangle(c)
	return r.Max.X - r.Min.X
}

// plotPalette: 12 colours distinguishable from each other (Paul Tol's
// "muted" scheme and its extension), for up to 12 policies.
var plotPalette = []color.NRGBA{
	{0x33, 0x22, 0x88, 255}, {0x88, 0xCC, 0xEE, 255}, {0x44, 0xAA, 0x99, 255}, {0x11, 0x77, 0x33, 255},
	{0x99, 0x99, 0x33, 255}, {0xDD, 0xCC, 0x77, 255}, {0xCC, 0x66, 0x77, 255}, {0x88, 0x22, 0x55, 255},
	{0xAA, 0x44, 0x99, 255}, {0xEE, 0x77, 0x33, 255}, {0x00, 0x00, 0x00, 255}, {0x77, 0x77, 0x77, 255},
}

func plotColor(i int) color.NRGBA { return plotPalette[i%len(plotPalette)] }

// plotDashes cycles three patterns, so neighbouring policies differ in
// dashes as well as colour.
func plotDashes(i int) []vg.Length {
	switch i % 3 {
	case 1:
		return []vg.Length{vg.Points(6), vg.Points(2)}
	case 2:
		return []vg.Length{vg.Points(2), vg.Points(2)}
	}
	return nil
}

// replicasAxisMax is the replicas axis's top: 1.15 x the 99th percentile of
// the asked-for values, or the peak when that is no lower (one spike must
// not flatten the rest; the peak is named in the label instead).
func replicasAxisMax(desired []float64, peak int) float64 {
	s := slices.Clone(desired)
	slices.Sort(s)
	p99 := 1.0
	if len(s) > 0 {
		p99 = max(1, s[int(math.Ceil(0.99*float64(len(s))))-1])
	}
	top := math.Ceil(1.15 * p99)
	if top >= float64(peak) {
		return float64(peak) * 1.08
	}
	return top
}

// ttftBands summarises a timeline's per-period TTFT p95 into plotBins time
// bins: the median of each bin's known values (NaN in a bin without a first
// token) and, per run of known bins, the polygon of their 10th-90th
// percentiles.
func ttftBands(tl []Sample, span float64, x func(float64) float64) (plotter.XYs, []plotter.XYs) {
	width := span / plotBins
	if width <= 0 {
		width = 1
	}
	vals := make([]hist, plotBins) // the replay's own quantile sketch
	for _, s := range tl {
		if math.IsNaN(s.TTFTP95) || s.TTFTP95 <= 0 {
			continue
		}
		vals[min(int(s.T/width), plotBins-1)].add(s.TTFTP95)
	}
	var med plotter.XYs
	var bands []plotter.XYs
	var upper, lower plotter.XYs
	flush := func() {
		if len(upper) > 0 {
			slices.Reverse(lower)
			bands = append(bands, append(upper, lower...))
		}
		upper, lower = nil, nil
	}
	for b := range vals {
		v := &vals[b]
		mid := x((float64(b) + 0.5) * width)
		if v.n == 0 {
			med = append(med, plotter.XY{X: mid, Y: math.NaN()})
			flush()
			continue
		}
		med = append(med, plotter.XY{X: mid, Y: v.quantile(0.5)})
		upper = append(upper, plotter.XY{X: mid, Y: v.quantile(0.9)})
		lower = append(lower, plotter.XY{X: mid, Y: v.quantile(0.1)})
	}
	flush()
	return med, bands
}

// splitRuns cuts xys at NaN values into runs of known points (a line breaks
// where TTFT is unknown instead of joining across the gap).
func splitRuns(xys plotter.XYs) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for _, p := range xys {
		if math.IsNaN(p.Y) {
			if len(cur) > 0 {
				out, cur = append(out, cur), nil
			}
			continue
		}
		cur = append(cur, p)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// dateTicks marks a unix-seconds axis on calendar boundaries in loc: up to
// 12 h a labelled tick each hour ("Jan 02 15:04", minor every 15 min); up
// to 2 days every 6 h (minor hourly); up to 3 weeks each midnight ("Mon Jan
// 02", minor every 6 h); beyond, each Monday.
type dateTicks struct{ loc *time.Location }

// Ticks implements plot.Ticker.
func (d dateTicks) Ticks(lo, hi float64) []plot.Tick {
	span := time.Duration((hi - lo) * float64(time.Second))
	major, minor, format := 24*time.Hour, 6*time.Hour, "Mon Jan 02"
	switch {
	case span <= 12*time.Hour:
		major, minor, format = time.Hour, 15*time.Minute, "Jan 02 15:04"
	case span <= 2*24*time.Hour:
		major, minor, format = 6*time.Hour, time.Hour, "Jan 02 15:04"
	case span > 21*24*time.Hour:
		major = 7 * 24 * time.Hour
	}
	t0 := time.Unix(int64(lo), 0).In(d.loc)
	t := time.Date(t0.Year(), t0.Month(), t0.Day(), 0, 0, 0, 0, d.loc) // local midnight: calendar steps from there
	var ticks []plot.Tick
	for ; float64(t.Unix()) <= hi; t = t.Add(minor) {
		v := float64(t.Unix())
		if v < lo {
			continue
		}
		label := ""
		sinceMidnight := t.Sub(time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, d.loc))
		switch {
		case major < 24*time.Hour && sinceMidnight%major == 0,
			major == 24*time.Hour && sinceMidnight == 0,
			major > 24*time.Hour && sinceMidnight == 0 && t.Weekday() == time.Monday:
			label = t.Format(format)
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
	}
	return ticks
}
