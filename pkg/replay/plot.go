package replay

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

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

// plotMaxSteps is the most steps the replicas panel draws per policy: a
// longer timeline (a week of 15 s periods is 40,320) is drawn as the most
// replicas asked for in each of at most this many bins of a round width.
const plotMaxSteps = 400

// PlotAt is Plot with the time axis in dates when start (the time of the
// timelines' t = 0) is not zero, as a backtest of real history has it.
//
// The policies' legend sits right of the panels, outside the data; up to 12
// policies get distinct colours and, cycling through four patterns, dashes
// that differ between neighbours. Replicas are a step line; over more than
// plotMaxSteps periods each step is a bin's peak (the label says the bin).
// The replicas axis ends at the 99th percentile of all asked-for values
// (times 1.15), so that one spike does not flatten the rest; the label then
// says where the peak was cut. TTFT is shown as quantile bands: per policy
// and per time bin (plotBins over the span), the median of the periods' p95
// as a line and their 10th-90th percentiles as a translucent band, with the
// SLO as a dashed black line, on a log10 axis.
func PlotAt(w io.Writer, format string, results []Result, slo float64, start time.Time) error {
	pl, err := newPanels(results, slo, start)
	if err != nil {
		return err
	}
	return pl.write(w, format)
}

// PlotPairAt draws a P/D pair's results (RunAllPD with Config.Timeline)
// as PlotAt draws one pool's, with the replicas panel split per pool:
// the load (the pair's arrivals, at the prefill pool), the replicas each
// policy asked for in the prefill pool, in the decode pool (one colour
// and dash per policy in both), and TTFT p95 per period over the whole
// path (the decode pool's first tokens: queue, prefill, KV transfer and
// first decode step) against the SLO. start as PlotAt's; format "png"
// or "svg".
func PlotPairAt(w io.Writer, format string, results []PDResult, slo float64, start time.Time) error {
	pl, err := newPairPanels(results, slo, start)
	if err != nil {
		return err
	}
	return pl.write(w, format)
}

// newPairPanels builds PlotPairAt's plots: newPanels' of each pool, its
// load and TTFT from the prefill and decode pool's timelines.
func newPairPanels(results []PDResult, slo float64, start time.Time) (*panels, error) {
	pre, dec := make([]Result, len(results)), make([]Result, len(results))
	for i, r := range results {
		pre[i], dec[i] = r.Prefill, r.Decode
		pre[i].Policy, dec[i].Policy = r.Policy, r.Policy
		pre[i].Trace, dec[i].Trace = r.Trace, r.Trace
	}
	pp, err := newPanels(pre, slo, start)
	if err != nil {
		return nil, err
	}
	dp, err := newPanels(dec, slo, start)
	if err != nil {
		return nil, err
	}
	pp.plots[1].Title.Text = "prefill pool"
	dp.plots[1].Title.Text = "decode pool"
	dp.plots[2].Title.Text = "TTFT p95 of the pair's path per period: median (line) and 10-90% (band) per time bin"
	return &panels{plots: []*plot.Plot{pp.plots[0], pp.plots[1], dp.plots[1], dp.plots[2]}, legendRow: 1, legend: pp.legend, names: pp.names}, nil
}

// write draws pl on a canvas of format, 32 cm wide and 10 cm high per
// panel, to w.
func (pl *panels) write(w io.Writer, format string) error {
	cw, err := Canvas(format, 32*vg.Centimeter, vg.Length(len(pl.plots))*10*vg.Centimeter)
	if err != nil {
		return err
	}
	pl.draw(draw.New(cw))
	_, err = cw.WriteTo(w)
	return err
}

// Canvas is a width x height canvas for format, "png" or "svg"; any other
// format is an error naming the two.
func Canvas(format string, width, height vg.Length) (vg.CanvasWriterTo, error) {
	switch format {
	case "png":
		return vgimg.PngCanvas{Canvas: vgimg.New(width, height)}, nil
	case "svg":
		return vgsvg.New(width, height), nil
	}
	return nil, fmt.Errorf("plot format %q: want png or svg", format)
}

// panels are the stacked plots (PlotAt's three: load, replicas, TTFT)
// and the policies' legend, drawn level with plots[legendRow].
type panels struct {
	plots     []*plot.Plot
	legendRow int
	legend    plot.Legend
	// names are the legend's entries.
	names []string
}

// newPanels builds PlotAt's plots from the results.
func newPanels(results []Result, slo float64, start time.Time) (*panels, error) {
	if len(results) == 0 || len(results[0].Timeline) == 0 {
		return nil, errors.New("plot: no timeline (run with Config.Timeline)")
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
	// The TTFT axis is linear in log10(seconds), labelled in seconds:
	// gonum centres an axis label at the arithmetic middle of the range,
	// which on its LogScale sits near the top and pushed the panel down
	// under a gap with its title left above it.
	ttft.Title.Text = "TTFT p95 per period: median (line) and 10-90% (band) per time bin"
	ttft.Y.Label.Text = fmt.Sprintf("TTFT p95 (s, log); dashed: SLO %gs", slo)
	ttft.X.Label.Text = "time (" + unit + ")"
	ttft.Y.Tick.Marker = log10Ticks{}

	binW := replicaBin(span, len(tl0))
	mean, band := loadBins(tl0, binW, x)
	if band != nil {
		poly, err := plotter.NewPolygon(band)
		if err != nil {
			return nil, err
		}
		poly.Color, poly.LineStyle.Width = color.Gray{Y: 200}, 0
		load.Add(poly)
		load.Y.Label.Text = "arrivals/s: mean (line), range (band) per " + binText(binW)
	}
	al, err := plotter.NewLine(mean)
	if err != nil {
		return nil, err
	}
	al.Color = color.Gray{Y: 60}
	load.Add(al)
	load.Y.Tick.Marker = plainTicks{}

	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.ThumbnailWidth = vg.Points(36) // long enough to show the dashes
	legend.TextStyle.Font.Size = vg.Points(11)
	var desired []float64
	var names []string
	peak := 1
	lo, hi := slo, slo
	for i, r := range results {
		c, dashes := plotColor(i), plotDashes(i)
		for _, s := range r.Timeline {
			desired = append(desired, float64(s.Desired))
			peak = max(peak, s.Desired)
		}
		l, err := plotter.NewLine(replicaSteps(r.Timeline, binW, x))
		if err != nil {
			return nil, err
		}
		l.StepStyle = plotter.PostStep
		l.Color, l.Dashes, l.Width = c, dashes, vg.Points(1.5)
		reps.Add(l)
		legend.Add(r.Policy, l)
		names = append(names, r.Policy)

		med, band := ttftBands(r.Timeline, span, x)
		for _, seg := range band {
			for k := range seg {
				lo, hi = math.Min(lo, seg[k].Y), math.Max(hi, seg[k].Y)
				seg[k].Y = math.Log10(seg[k].Y)
			}
			poly, err := plotter.NewPolygon(seg)
			if err != nil {
				return nil, err
			}
			poly.Color = color.NRGBA{R: c.R, G: c.G, B: c.B, A: 40}
			poly.LineStyle.Width = 0
			ttft.Add(poly)
		}
		for _, seg := range splitRuns(med) {
			for k := range seg {
				seg[k].Y = math.Log10(seg[k].Y)
			}
			ml, err := plotter.NewLine(seg)
			if err != nil {
				return nil, err
			}
			ml.Color, ml.Dashes, ml.Width = c, dashes, vg.Points(1.5)
			ttft.Add(ml)
		}
	}
	sloLine, err := plotter.NewLine(plotter.XYs{{X: x(0), Y: math.Log10(slo)}, {X: x(span), Y: math.Log10(slo)}})
	if err != nil {
		return nil, err
	}
	sloLine.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	ttft.Add(sloLine)
	ttft.Y.Min, ttft.Y.Max = math.Log10(lo/1.5), math.Log10(hi*1.5)

	top := replicasAxisMax(desired, peak)
	reps.Y.Min, reps.Y.Max = 0, top
	reps.Y.Tick.Marker = plainTicks{}
	reps.Y.Label.Text = "replicas asked for"
	if binW > 0 {
		reps.Y.Label.Text += ", the most per " + binText(binW)
	}
	if top < float64(peak) {
		reps.Y.Label.Text += fmt.Sprintf(" (cut at %.0f; peak %d)", top, peak)
	}
	for _, p := range []*plot.Plot{load, reps, ttft} {
		p.X.Min, p.X.Max = x(0), x(span)
		p.Add(plotter.NewGrid())
	}
	return &panels{plots: []*plot.Plot{load, reps, ttft}, legendRow: 1, legend: legend, names: names}, nil
}

// draw lays the panels out on dc, stacked and aligned, with the legend in
// a column of its own on the right, level with plots[legendRow]; it
// returns the panels' canvases (in plots' order) and the legend's.
func (pl *panels) draw(dc draw.Canvas) ([]draw.Canvas, draw.Canvas) {
	width := dc.Max.X - dc.Min.X
	// The legend's column: its entries' measured width with a fifth to
	// spare, and at least 0.6 em a character (a viewer of the SVG without
	// the measured font substitutes a wider one; names of narrow
	// characters, pd(fixed:1;fixed:2), measure well under that), at most
	// a third of the width.
	lw := legendWidth(pl.legend, dc) * 6 / 5
	for _, n := range pl.names {
		lw = max(lw, pl.legend.ThumbnailWidth+pl.legend.Padding+vg.Length(0.6*float64(utf8.RuneCountInString(n)))*pl.legend.TextStyle.Font.Size)
	}
	lw = min(lw+6*vg.Millimeter, width/3)
	area := draw.Crop(dc, 0, -lw, 0, 0)
	plots := make([][]*plot.Plot, len(pl.plots))
	for i, p := range pl.plots {
		plots[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter, PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	canvases := plot.Align(plots, tiles, area)
	out := make([]draw.Canvas, len(plots))
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
		out[i] = canvases[i][0]
	}
	lc := draw.Crop(dc, width-lw+3*vg.Millimeter, 0, 0, 0)
	lc.Max.Y = canvases[pl.legendRow][0].Max.Y
	pl.legend.Draw(lc)
	return out, lc
}

// legendWidth is the width the legend's entries need.
func legendWidth(l plot.Legend, c draw.Canvas) vg.Length {
	r := l.Rectangle(c)
	return r.Max.X - r.Min.X
}

// plotPalette: 12 colours distinguishable from each other and on white
// (matplotlib's "tab10", then black and a dark blue-grey), for up to 12
// policies.
var plotPalette = []color.NRGBA{
	{0x1f, 0x77, 0xb4, 255}, {0xff, 0x7f, 0x0e, 255}, {0x2c, 0xa0, 0x2c, 255}, {0xd6, 0x27, 0x28, 255},
	{0x94, 0x67, 0xbd, 255}, {0x8c, 0x56, 0x4b, 255}, {0xe3, 0x77, 0xc2, 255}, {0x7f, 0x7f, 0x7f, 255},
	{0xbc, 0xbd, 0x22, 255}, {0x17, 0xbe, 0xcf, 255}, {0x00, 0x00, 0x00, 255}, {0x3b, 0x4d, 0x61, 255},
}

func plotColor(i int) color.NRGBA { return plotPalette[i%len(plotPalette)] }

// plotDashes cycles four patterns (solid, long dashes, dots, dash-dot),
// so neighbouring policies differ in dashes as well as colour.
func plotDashes(i int) []vg.Length {
	switch i % 4 {
	case 1:
		return []vg.Length{vg.Points(7), vg.Points(3)}
	case 2:
		return []vg.Length{vg.Points(1.5), vg.Points(2.5)}
	case 3:
		return []vg.Length{vg.Points(7), vg.Points(2.5), vg.Points(1.5), vg.Points(2.5)}
	}
	return nil
}

// replicaBin is the width in seconds of the replicas panel's bins: 0 (no
// binning) for a timeline of at most plotMaxSteps samples, else the
// first round width (15 s to a day) that gives at most plotMaxSteps bins.
func replicaBin(span float64, samples int) float64 {
	if samples <= plotMaxSteps {
		return 0
	}
	for _, w := range []float64{15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200} {
		if span/w <= plotMaxSteps {
			return w
		}
	}
	return 86400
}

// loadBins is a timeline's arrival rate as drawn: every sample with
// width 0 (and no band), else per bin of width seconds (as replicaSteps)
// the mean at the bin's middle and the polygon of the lowest and highest.
func loadBins(tl []Sample, width float64, x func(float64) float64) (mean, band plotter.XYs) {
	if width <= 0 {
		for _, s := range tl {
			mean = append(mean, plotter.XY{X: x(s.T), Y: s.ArrivalRate})
		}
		return mean, nil
	}
	var lower plotter.XYs
	bin, n, sum, lo, hi := -1, 0, 0.0, 0.0, 0.0
	flush := func() {
		mid := x(math.Min((float64(bin)+0.5)*width, tl[len(tl)-1].T))
		mean = append(mean, plotter.XY{X: mid, Y: sum / float64(n)})
		band = append(band, plotter.XY{X: mid, Y: hi})
		lower = append(lower, plotter.XY{X: mid, Y: lo})
	}
	for _, s := range tl {
		b := max(0, int(math.Ceil(s.T/width))-1)
		if b != bin {
			if n > 0 {
				flush()
			}
			bin, n, sum, lo, hi = b, 0, 0, s.ArrivalRate, s.ArrivalRate
		}
		n, sum = n+1, sum+s.ArrivalRate
		lo, hi = math.Min(lo, s.ArrivalRate), math.Max(hi, s.ArrivalRate)
	}
	if n > 0 {
		flush()
	}
	slices.Reverse(lower)
	return mean, append(band, lower...)
}

// binText is a bin width of replicaBin in words: "30 s", "15 min", "2 h".
func binText(w float64) string {
	switch {
	case w < 60:
		return fmt.Sprintf("%g s", w)
	case w < 3600:
		return fmt.Sprintf("%g min", w/60)
	}
	return fmt.Sprintf("%g h", w/3600)
}

// replicaSteps are a timeline's asked-for replicas as the points of a
// step line: every sample with width 0, else per bin of width seconds the
// most asked for (at the bin's start; a sample at T closes the period
// ending at T, so T = width is in the first bin) and the last bin's end
// (the line's last step has a length).
func replicaSteps(tl []Sample, width float64, x func(float64) float64) plotter.XYs {
	var out plotter.XYs
	if width <= 0 {
		for _, s := range tl {
			out = append(out, plotter.XY{X: x(s.T), Y: float64(s.Desired)})
		}
		return out
	}
	bin, most := -1, 0
	for _, s := range tl {
		b := max(0, int(math.Ceil(s.T/width))-1) // a sample closes the period that ends at T
		if b != bin {
			if bin >= 0 {
				out = append(out, plotter.XY{X: x(float64(bin) * width), Y: float64(most)})
			}
			bin, most = b, s.Desired
		}
		most = max(most, s.Desired)
	}
	if bin >= 0 {
		out = append(out, plotter.XY{X: x(float64(bin) * width), Y: float64(most)},
			plotter.XY{X: x(math.Min(float64(bin+1)*width, tl[len(tl)-1].T)), Y: float64(most)})
	}
	return out
}

// plainTicks are gonum's default ticks labelled in the shortest form
// ("75", not "75.00").
type plainTicks struct{}

// Ticks implements plot.Ticker.
func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
		}
	}
	return ticks
}

// log10Ticks marks an axis whose values are log10 of the quantity: a
// labelled tick at each power of ten (the quantity, e.g. "0.01", "10"),
// minor ticks at 2..9 times it.
type log10Ticks struct{}

// Ticks implements plot.Ticker.
func (log10Ticks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for k := math.Floor(lo); k <= math.Ceil(hi); k++ {
		for m := 1; m <= 9; m++ {
			v := k + math.Log10(float64(m))
			if v < lo || v > hi {
				continue
			}
			label := ""
			if m == 1 {
				label = strconv.FormatFloat(math.Pow(10, k), 'f', -1, 64)
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label})
		}
	}
	return ticks
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
	// A bin is at least one period (the timeline's step): narrower ones
	// left empty bins between the periods, and the line, broken at each,
	// drew nothing for a replay of fewer than plotBins periods.
	if len(tl) >= 2 {
		width = max(width, tl[1].T-tl[0].T)
	}
	if width <= 0 {
		width = 1
	}
	n := max(1, min(plotBins, int(math.Ceil(span/width))))
	vals := make([]hist, n) // the replay's own quantile sketch
	for _, s := range tl {
		if math.IsNaN(s.TTFTP95) || s.TTFTP95 <= 0 {
			continue
		}
		// A sample at t closes the period (t - step, t]: its bin.
		vals[max(0, min(int(math.Ceil(s.T/width))-1, n-1))].add(s.TTFTP95)
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
