package replay

import (
	"errors"
	"fmt"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot draws three aligned panels over the trace's time, from the results'
// timelines (run with Config.Timeline): the load (arrivals per second), the
// replicas each policy asked for, and each policy's TTFT p95 per period on a
// log scale with the SLO as a dashed line. The policies' legend is in the
// replicas panel, above the lines; time is in seconds, hours (traces over
// 3 h) or days (over 3 days). format is "png" or "svg".
func Plot(w io.Writer, format string, results []Result, slo float64) error {
	if len(results) == 0 || len(results[0].Timeline) == 0 {
		return errors.New("plot: no timeline (run with Config.Timeline)")
	}
	tl0 := results[0].Timeline
	unit, per := "s", 1.0
	switch end := tl0[len(tl0)-1].T; {
	case end > 3*86400:
		unit, per = "days", 86400
	case end > 3*3600:
		unit, per = "h", 3600
	}
	load, reps, ttft := plot.New(), plot.New(), plot.New()
	load.Title.Text = "load: " + results[0].Trace
	load.Y.Label.Text = "arrivals/s"
	reps.Y.Label.Text = "replicas asked for"
	ttft.Y.Label.Text = fmt.Sprintf("TTFT p95 (s); dashed: SLO %gs", slo)
	ttft.X.Label.Text = "time (" + unit + ")"
	ttft.Y.Scale = plot.LogScale{}
	ttft.Y.Tick.Marker = plot.LogTicks{Prec: -1}

	var arr plotter.XYs
	for _, s := range results[0].Timeline {
		arr = append(arr, plotter.XY{X: s.T / per, Y: s.ArrivalRate})
	}
	if err := plotutil.AddLines(load, arr); err != nil {
		return err
	}
	var repLines []any
	lo, hi := slo, slo
	peak := 1
	for i, r := range results {
		var rp plotter.XYs
		// TTFT is unknown in periods without a first token: the line breaks
		// there instead of joining across the gap.
		var segs []plotter.XYs
		var cur plotter.XYs
		for _, s := range r.Timeline {
			rp = append(rp, plotter.XY{X: s.T / per, Y: float64(s.Desired)})
			peak = max(peak, s.Desired)
			if math.IsNaN(s.TTFTP95) || s.TTFTP95 <= 0 {
				if len(cur) > 0 {
					segs, cur = append(segs, cur), nil
				}
				continue
			}
			cur = append(cur, plotter.XY{X: s.T / per, Y: s.TTFTP95})
			lo, hi = math.Min(lo, s.TTFTP95), math.Max(hi, s.TTFTP95)
		}
		if len(cur) > 0 {
			segs = append(segs, cur)
		}
		repLines = append(repLines, r.Policy, rp)
		for _, seg := range segs {
			l, err := plotter.NewLine(seg)
			if err != nil {
				return err
			}
			l.Color = plotutil.Color(i)
			l.Dashes = plotutil.Dashes(i)
			ttft.Add(l)
		}
	}
	if err := plotutil.AddLines(reps, repLines...); err != nil {
		return err
	}
	end := tl0[len(tl0)-1].T / per
	sloLine, err := plotter.NewLine(plotter.XYs{{X: 0, Y: slo}, {X: end, Y: slo}})
	if err != nil {
		return err
	}
	sloLine.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	ttft.Add(sloLine)
	ttft.Y.Min, ttft.Y.Max = lo/1.5, hi*1.5
	for _, p := range []*plot.Plot{load, reps, ttft} {
		p.X.Min, p.X.Max = 0, end
		p.Add(plotter.NewGrid())
	}
	// The legend (one row per policy, about 4.5% of the panel's height
	// each) goes above the lines: headroom over the peak.
	reps.Legend.Top, reps.Legend.Left = true, true
	reps.Y.Min, reps.Y.Max = 0, float64(peak)/math.Max(0.3, 0.92-0.045*float64(len(results)))

	width, height := 28*vg.Centimeter, 30*vg.Centimeter
	var c vg.CanvasWriterTo
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.New(width, height)}
	case "svg":
		c = vgsvg.New(width, height)
	default:
		return fmt.Errorf("plot format %q: want png or svg", format)
	}
	plots := [][]*plot.Plot{{load}, {reps}, {ttft}}
	tiles := draw.Tiles{Rows: 3, Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter, PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	canvases := plot.Align(plots, tiles, draw.New(c))
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	_, err = c.WriteTo(w)
	return err
}
