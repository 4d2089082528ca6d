package load

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/infscale/infscale/pkg/replica"
)

// Report is a run's result: one point, or a sweep's points and knee.
type Report struct {
	Summary
	// Points are a sweep's points in increasing load (absent for one point).
	Points []Summary `json:"points,omitempty"`
	// Knee is a sweep's knee (absent for one point).
	Knee *Knee `json:"knee,omitempty"`
	// CalibrationPoints are a calibration's points at its other prompt
	// lengths (each point's prompt_tokens / requests is its prompt length),
	// run at the sweep's concurrencies up to the fit's limit.
	CalibrationPoints []Summary `json:"calibration_points,omitempty"`
	// Calibration is the fit written with --calibrate.
	Calibration *replica.Calibration `json:"calibration,omitempty"`
	// CalibrationWarnings are the fit's warning lines (not in the file):
	// the text output's lines under the fitted parameters.
	CalibrationWarnings []string `json:"calibration_warnings,omitempty"`
	// Interrupted is set when an interrupt cut the sweep short: Points
	// are those that finished before it.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Sweep runs base at each load of loads in increasing order: concurrency
// when concurrency is true, else rates. It stops after the first point that
// misses slo (the knee is below it; higher loads would only take longer),
// unless all is set (a calibration needs every point).
// point, if set, is called after each point that finished; a point an
// interrupt (ctx) cut short is not reported: Sweep returns ctx's error at
// once, with the report of the points that finished before it (Interrupted
// set; empty when none did). With one load the report is that point's
// summary alone.
func Sweep(ctx context.Context, base Config, concurrency bool, loads []float64, slo SLO, all bool, point func(Summary)) (Report, error) {
	if len(loads) == 0 {
		return Report{}, errors.New("load: no load given")
	}
	var points []Summary
	for _, l := range loads {
		cfg := base
		if concurrency {
			cfg.Concurrency, cfg.Rate = int(l), 0
		} else {
			cfg.Rate, cfg.Concurrency = l, 0
		}
		pt, err := RunPoint(ctx, cfg)
		if ctx.Err() != nil {
			// Interrupted: the point did not finish, and nothing after
			// it starts; point is not called (nothing more is announced).
			// The points that finished are still measurements.
			if len(points) == 0 {
				return Report{}, ctx.Err()
			}
			rep := sweepReport(points, slo)
			rep.Interrupted = true
			return rep, ctx.Err()
		}
		if err != nil {
			return Report{}, err
		}
		s := SummarizeRun(cfg, pt)
		points = append(points, s)
		if point != nil {
			point(s)
		}
		if StopsAfter(s, len(loads), slo, all) {
			break
		}
	}
	if len(loads) == 1 {
		return Report{Summary: points[0]}, nil
	}
	return sweepReport(points, slo), nil
}

// StopsAfter reports whether a sweep of n loads ends after its point s
// although loads remain: s misses slo (the knee is below it), the sweep has
// more than one load and all (a calibration's every point) is not set.
func StopsAfter(s Summary, n int, slo SLO, all bool) bool {
	return n > 1 && !all && !slo.Meets(s)
}

// sweepReport is the report of a sweep's points: the knee and, at the top
// level, the knee point's summary (else the last point's).
func sweepReport(points []Summary, slo SLO) Report {
	k := FindKnee(points, slo)
	top := points[len(points)-1]
	if k.Found {
		for _, p := range points {
			if p.Concurrency == k.Concurrency && p.Rate == k.Rate {
				top = p
			}
		}
	}
	return Report{Summary: top, Points: points, Knee: &k}
}

// ParseLoads reads a comma-separated list of loads ("1,2,4,8"), each > 0
// and at most 1e6, increasing; integers when integer is set. The error names the item.
func ParseLoads(s string, integer bool) ([]float64, error) {
	var out []float64
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		v, err := strconv.ParseFloat(item, 64)
		if integer {
			var n int
			n, err = strconv.Atoi(item)
			v = float64(n)
		}
		switch {
		case err != nil || !(v > 0) || v > 1e6:
			kind := "a number > 0 and <= 1000000"
			if integer {
				kind = "an integer from 1 to 1000000"
			}
			return nil, fmt.Errorf("item %d %q: want %s", i+1, item, kind)
		case len(out) > 0 && v <= out[len(out)-1]:
			return nil, fmt.Errorf("item %d %s: loads must increase", i+1, item)
		}
		out = append(out, v)
	}
	return out, nil
}
